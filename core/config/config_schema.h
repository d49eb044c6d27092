// Every field of a job file, declared once: its key, where it lives in JobConfig, what values
// it takes and a line of documentation. Three visitors walk VisitJobConfig: the YAML reader
// (ParseJobConfig), the resolved-YAML writer (JobConfigToYaml) and the Markdown writer of
// README's configuration reference (ConfigReferenceMarkdown). Rules that tie several fields
// together live in ValidateJobConfig, not here.
//
// A visitor V provides:
//   void Section(const char* key, const char* note, Body body);  // body() visits its fields
//   template <class T, class Spec> void Field(const char* key, T* value, Spec spec, Doc doc);
//   void Exclusive(const char* a, const char* b, const char* message);  // keys of this section
//   template <class T> void Derive(T* value, T value_now);  // the reader's default, from fields
//                                                          // read before it
#ifndef MONSOON_CORE_CONFIG_CONFIG_SCHEMA_H_
#define MONSOON_CORE_CONFIG_CONFIG_SCHEMA_H_

#include "core/config/job_config.h"

namespace monsoon {

// What a field takes. Each kind is read, written and documented by every visitor.
struct IntRange {  // int in [min, max]
  int min, max;
};
struct AnyUint64 {};  // uint64_t
struct RealRange {    // double (or float) in [min, max], or (min, max] when min_open
  double min;
  bool min_open;
  double max;
};
// A number of seconds in [0, max], or `off` (stored as kStallWatchOff).
struct SecondsOrOff {
  double max;
};
struct Flag {};      // bool
struct Text {};      // any string
struct CudnnPath {};  // CudnnLibrary: `auto`, `off` or an absolute path
struct Word {};      // a string `monsoon sbatch` writes into an #SBATCH line: one word
struct RunName {};   // a name that becomes a directory (CheckRunName)
struct Path {};      // an existing file; relative to the job file's directory; "" when not given
struct PathList {};  // existing files as Path's; one path is a list of one
struct IntList {     // a list of ints >= min
  int min;
};
struct SbatchOptions {};  // a list of "--option=value" strings
struct ShellLines {};     // a list of one-line shell commands
// A program and its arguments; an argument naming a file relative to the job file's
// directory becomes that file's absolute path. Empty when not given.
struct ProgramArgs {};
struct LayerList {};  // model.layers: names ("relu") and one-key maps ({dense: {units: 8}})
// model.input_shape: a list of ints >= 1. When neither it nor input_dim is given and the data's
// files carry the shape, the reader sets *from_data instead: ResolveInputShape reads it.
struct ShapeFromData {
  const DataConfig* data;
  bool* from_data;
};
// An enum field or a list of enum values takes EnumNames<E>.

// A field's documentation: its meaning, and where the generated table should not derive the
// type or default from the spec and the default value, what to print instead.
class Doc {
 public:
  Doc(const char* meaning) : meaning_(meaning) {}  // NOLINT: a doc is written as its text
  Doc Type(const char* type) && {
    type_ = type;
    return *this;
  }
  Doc Default(const char* value) && {
    default_ = value;
    return *this;
  }
  // The resolved-YAML writer leaves the field out when `written` is false (a field that is
  // not set, whose absence the reader takes as the same value).
  Doc WrittenIf(bool written) && {
    written_ = written;
    return *this;
  }
  const char* meaning() const { return meaning_; }
  const char* type() const { return type_; }
  const char* default_value() const { return default_; }
  bool written() const { return written_; }

 private:
  const char* meaning_;
  const char* type_ = nullptr;
  const char* default_ = nullptr;
  bool written_ = true;
};

// The parts of VisitJobConfig, in the order of the job file.
template <class V>
void VisitJobAndModel(JobConfig& c, V& v);
template <class V>
void VisitData(JobConfig& c, V& v);
template <class V>
void VisitTraining(JobConfig& c, V& v);
template <class V>
void VisitCluster(JobConfig& c, V& v);
template <class V>
void VisitUpdates(JobConfig& c, V& v);
template <class V>
void VisitRuntime(JobConfig& c, V& v);
template <class V>
void VisitCompute(JobConfig& c, V& v);
template <class V>
void VisitOperations(JobConfig& c, V& v);
template <class V>
void VisitDeployment(JobConfig& c, V& v);

template <class V>
void VisitJobConfig(JobConfig& c, V& v) {
  VisitJobAndModel(c, v);
  VisitTraining(c, v);
  VisitUpdates(c, v);
  VisitRuntime(c, v);
  VisitCompute(c, v);
  VisitOperations(c, v);
  VisitDeployment(c, v);
}

template <class V>
void VisitCluster(JobConfig& c, V& v) {
  v.Section("cluster", "", [&] {
    v.Field("servers", &c.cluster.servers, IntRange{1, 1024}, "parameter servers");
    v.Field("workers", &c.cluster.workers, IntRange{1, 4096},
            "workers; each trains on `1/workers` of the data");
    v.Field("workers_per_node", &c.cluster.workers_per_node, IntRange{1, c.cluster.workers},
            Doc("workers `i` with the same `i / workers_per_node` form a node, which shares a "
                "host: an emulated one with `network.hosts: namespaces`; on a cluster the launch "
                "must place them so (see [Concepts](#concepts))")
                .Type("integer (1–workers)"));
    v.Field("aggregate_per_node", &c.cluster.aggregate_per_node, Flag{},
            "a node's workers sum their gradients through shared memory and push once per "
            "step, the servers counting each node as one client (see [Concepts](#concepts))");
    v.Field("evaluator", &c.cluster.evaluator, Flag{}, "run an evaluator (needs test data)");
    v.Field("assignment", &c.cluster.assignment, kAssignmentNames,
            "how tasks of a parallel launch get roles (see "
            "[SLURM](#how-tasks-get-their-roles))");
    v.Field("ranks", &c.cluster.ranks, kRoleKindNames,
            "explicit role of each rank; must list exactly the cluster's roles");
    v.Field("worker_program", &c.cluster.worker_program, ProgramArgs{},
            Doc("the program the workers and the evaluator run instead of Monsoon's model, with "
                "its arguments, e.g. `[python3, train.py]`; needs `model.type: program` (see "
                "[Bring a PyTorch model](#bring-a-pytorch-model))")
                .Default("—"));
  });
}

template <class V>
void VisitJobAndModel(JobConfig& c, V& v) {
  v.Field("job", &c.job, RunName{},
          "the job's name; the default run directory is `runs/JOB/TIMESTAMP`, and the SLURM "
          "job's name");
  v.Field("seed", &c.seed, AnyUint64{}, "seeds weight initialisation and data shuffling");
  VisitCluster(c, v);
  VisitData(c, v);
  v.Section("model", "", [&] {
    v.Field("input_shape", &c.model.input_shape,
            ShapeFromData{&c.data, &c.model.input_shape_from_data},
            Doc("the shape of one example, e.g. `[1, 28, 28]` (channels, height, width)")
                .Default("the data's (idx, npy, hdf5); `[input_dim]` with `input_dim`"));
    v.Derive(&c.model.input_dim,
             c.model.input_shape.empty() ? c.model.input_dim : ShapeSize(c.model.input_shape));
    v.Field("input_dim", &c.model.input_dim, IntRange{1, 1 << 24},
            Doc("features per example; must match the data")
                .Default("`input_shape`'s size; *required* for csv"));
    v.Field("layers", &c.model.layers, LayerList{},
            Doc("the model as a list of layers, each a name or a one-key map of its settings "
                "(the kinds and their settings: [Models](#models)); shapes are inferred from "
                "`input_shape`. Replaces `type`")
                .Default("—"));
    v.Derive(&c.model.type, c.model.layers.empty() ? ModelType::kMlp : ModelType::kLayers);
    v.Field("type", &c.model.type, kModelTypeNames,
            Doc("`layers` (the `layers` list) or a shorthand for one: `mlp`, "
                "`linear_regression`, `softmax_regression`; or `program`: the model is "
                "`cluster.worker_program`'s")
                .Default("`mlp`; `layers` with `layers`"));
    v.Field("num_params", &c.model.num_params, IntRange{0, 1 << 30},
            Doc("`program` only: the length of the program's flat parameter vector; the "
                "launcher sets it from the program's initial weights")
                .Default("—")
                .WrittenIf(c.model.type == ModelType::kProgram));
    v.Field("num_state", &c.model.num_state, IntRange{0, 1 << 30},
            Doc("`program` only: how many of those values are the model's state (its buffers, "
                "last in the vector); the launcher sets it from the program's initial weights")
                .Default("0")
                .WrittenIf(c.model.type == ModelType::kProgram && c.model.num_state > 0));
    v.Field("state_bound", &c.model.state_bound, RealRange{0, true, 3e38},
            "the largest magnitude a running mean or variance of the model's state (BatchNorm's "
            "statistics, a module's buffers) may hold: the servers refuse state pushes beyond "
            "it, or negative variances, or non-finite values, naming the tensor");
    v.Derive(&c.model.output_dim, LayersOutputSize(c.model));
    v.Field("output_dim", &c.model.output_dim, IntRange{1, 1 << 24},
            Doc("classes (classification) or targets (regression); a layer list's last output")
                .Default("*required* (but for `layers`)"));
    v.Field("hidden", &c.model.hidden, IntList{1},
            "MLP hidden-layer widths, e.g. `[256, 128]` (mlp only)");
    v.Field("activation", &c.model.activation, kActivationNames,
            "MLP hidden activation, as the layers of that name (`leaky_relu` with slope 0.01)");
    v.Derive(&c.model.loss, c.model.type == ModelType::kLinearRegression
                                ? LossType::kMeanSquaredError
                                : LossType::kSoftmaxCrossEntropy);
    v.Field("loss", &c.model.loss, kLossNames,
            Doc("`mean_squared_error` for linear regression, else softmax cross-entropy. "
                "`mean_squared_error` is ½‖prediction − target‖² per example, averaged: half "
                "the usual MSE, as the losses in every log, CSV and summary report it")
                .Default("by type"));
  });
}

// Before the model: the model's input shape may be read from the data.
template <class V>
void VisitData(JobConfig& c, V& v) {
  v.Section("data", "", [&] {
    v.Field("format", &c.data.format, kDataFormatNames,
            "`idx` (MNIST-family, gzip'd or plain), `csv`, `npy` (NumPy arrays) or `hdf5` (see "
            "[Data](#data))");
    v.Field("train_images", &c.data.train_images, Path{},
            Doc("IDX training images (uint8, scaled to [0, 1])").Default("*required for idx*"));
    v.Field("train_labels", &c.data.train_labels, Path{},
            Doc("IDX training labels").Default("*required for idx*"));
    v.Field("test_images", &c.data.test_images, Path{},
            "IDX test images; required when the evaluator runs");
    v.Field("test_labels", &c.data.test_labels, Path{}, "IDX test labels, with `test_images`");
    v.Field("train", &c.data.train, Path{},
            Doc("CSV with a header row and decimal numbers. Regression: the last "
                "`model.output_dim` columns are the targets; classification: the last column is "
                "the class label (0, 1, ...); the other columns are the features")
                .Default("*required for csv*"));
    v.Field("test", &c.data.test, Path{}, "CSV test set; required when the evaluator runs");
    v.Field("train_features", &c.data.train_features, Path{},
            Doc("`.npy` training features `[rows, ...]`: float32, float64 or uint8 (scaled to "
                "[0, 1])")
                .Default("*required for npy*"));
    v.Field("train_targets", &c.data.train_targets, Path{},
            Doc("`.npy` training targets `[rows]` (class labels) or `[rows, k]`, any integer "
                "or float type")
                .Default("*required for npy*"));
    v.Field("test_features", &c.data.test_features, Path{},
            "`.npy` test features; required when the evaluator runs");
    v.Field("test_targets", &c.data.test_targets, Path{}, "`.npy` test targets");
    v.Field("train_files", &c.data.train_files, PathList{},
            Doc("HDF5 files of training data, their rows concatenated in this order")
                .Default("*required for hdf5*"));
    v.Field("test_files", &c.data.test_files, PathList{},
            Doc("HDF5 files of test data; required when the evaluator runs").Default("—"));
    v.Field("features_dataset", &c.data.features_dataset, Text{},
            "HDF5: the dataset of features in each file (types as for `npy`)");
    v.Field("targets_dataset", &c.data.targets_dataset, Text{},
            "HDF5: the dataset of targets in each file");
    v.Field("memory_budget_mib", &c.data.memory_budget_mib, IntRange{0, 1 << 30},
            "the most memory, in MiB, a worker's shard may take held whole (as float32); a "
            "larger `npy` or `hdf5` shard is read from its files batch by batch (IDX and CSV "
            "are always read whole). 0: a quarter of the node's memory");
  });
}

template <class V>
void VisitTraining(JobConfig& c, V& v) {
  v.Section("training", "", [&] {
    v.Field("algorithm", &c.training.algorithm, kAlgorithmNames,
            "the training algorithm (see [Comparing algorithms](#comparing-algorithms))");
    v.Field("epochs", &c.training.epochs, IntRange{1, 100000},
            "passes of every worker over its shard");
    v.Field("batch_size", &c.training.batch_size, IntRange{1, 1 << 20}, "examples per worker step");
    v.Field("max_steps", &c.training.max_steps, IntRange{0, 1 << 30},
            "if > 0, each worker stops after this many steps even if epochs remain");
    v.Field("timeout_seconds", &c.training.timeout_seconds, RealRange{0, true, 1e7},
            "a job still running after this is stopped with an error");
    v.Field("learning_rate_schedule", &c.training.learning_rate_schedule, kScheduleNames,
            "`cosine` anneals every learning rate of the job (`optimizer.learning_rate` on the "
            "servers, `easgd.learning_rate` and `downpour.local_learning_rate` on the workers) "
            "from its value to 0 over `training.epochs`: a gradient computed at epoch e (its "
            "worker's progress) is applied at rate η · ½ (1 + cos(π e / epochs)). A run cut "
            "short by `training.max_steps` stops before the rate reaches 0");
    v.Field("warmup_epochs", &c.training.warmup_epochs, RealRange{0, false, 1e5},
            "linear warm-up: every learning rate (as for the schedule) is scaled by e / "
            "warmup_epochs for gradients computed at epoch e < warmup_epochs, from 0; fractions "
            "are fine (0.1 epoch of the default job is 47 steps of each worker)");
  });
  v.Section("stragglers", "(emulated: see [Stragglers](#stragglers))", [&] {
    v.Field("slow_workers", &c.stragglers.slow_workers, IntList{0},
            "workers whose every step's compute is made `slow_factor` times as long");
    v.Field("slow_factor", &c.stragglers.slow_factor, RealRange{1, false, 1000},
            "how many times as long a slow worker's compute takes (a sleep of `slow_factor - "
            "1` times each step's measured compute)");
    v.Field("probability", &c.stragglers.probability, RealRange{0, false, 1},
            "each step of every worker is delayed with this probability, drawn from (`seed`, "
            "worker, step)");
    v.Field("delay_ms", &c.stragglers.delay_ms, RealRange{0, false, 600000},
            "a delayed step's delay: fixed, or the mean of an exponential draw");
    v.Field("distribution", &c.stragglers.distribution, kDelayDistributionNames,
            "`fixed` or `exponential` delays");
  });
  v.Section("downpour", "", [&] {
    v.Field("n_fetch", &c.downpour.n_fetch, IntRange{1, 1 << 20},
            "pull the weights every `n_fetch` steps");
    v.Field("n_push", &c.downpour.n_push, IntRange{1, 1 << 20},
            "push the sum of the last `n_push` gradients");
    v.Field("local_learning_rate", &c.downpour.local_learning_rate, RealRange{0, false, 1e3},
            "if > 0, workers also apply each gradient to their own copy between fetches");
    v.Field("warm_start_steps", &c.downpour.warm_start_steps, IntRange{0, 1 << 30},
            "warm start: worker 0 trains alone for this many steps before the others start");
  });
  v.Section("sync", "(`algorithm: sync`)", [&] {
    v.Field("quorum", &c.sync.quorum, IntRange{0, c.cluster.pushing_clients()},
            Doc("K: a round is applied with the first K fresh gradients (N − K backup workers, "
                "or nodes with `cluster.aggregate_per_node`); 0 means all of them")
                .Type("integer (0–workers, or nodes)"));
    v.Field("backup_fraction", &c.sync.backup_fraction, RealRange{0, false, 0.5},
            "with `quorum: 0`, that fraction of the workers (rounded up) are backups: K = N − "
            "⌈fraction · N⌉, so a study over worker counts keeps the same share (0.05: 1 of "
            "8, 2 of 32, 7 of 128)");
    v.Field("late_gradients", &c.sync.late_gradients, kLateGradientsNames,
            "a gradient that arrives after its round closed is dropped, or folded into the "
            "next round with weight 1 / (1 + staleness)");
  });
  v.Section("ssp", "(`algorithm: ssp`)", [&] {
    v.Field("bound", &c.ssp.bound, IntRange{0, 1 << 20},
            "s: a worker starts step c only when every live worker has pushed ≥ c − s times "
            "(0 is lock-step)");
  });
}

template <class V>
void VisitUpdates(JobConfig& c, V& v) {
  v.Section("easgd", "(`algorithm: easgd` or `eamsgd`)", [&] {
    v.Field("tau", &c.easgd.tau, IntRange{1, 1 << 20}, "local steps between elastic exchanges");
    v.Field("alpha", &c.easgd.alpha, RealRange{0, true, 1},
            Doc("the elastic force α; give `alpha` or `beta`, not both")
                .Default("—")
                .WrittenIf(c.easgd.alpha > 0));
    v.Field("beta", &c.easgd.beta, RealRange{0, true, static_cast<double>(c.cluster.workers)},
            Doc("α = β / p with p the live workers, recomputed as workers finish")
                .Type("number (0, workers]")
                .WrittenIf(c.easgd.alpha == 0));
    v.Exclusive("alpha", "beta",
                "give easgd.alpha or easgd.beta (alpha = beta / workers), not both");
    v.Field("learning_rate", &c.easgd.learning_rate, RealRange{0, true, 1e3},
            "η of the workers' local SGD steps");
    v.Field("momentum", &c.easgd.momentum, RealRange{0, false, 0.999999},
            "δ, the workers' Nesterov momentum (`eamsgd` only)");
  });
  v.Section("staleness", "(`downpour`, `ssp`)", [&] {
    v.Field("policy", &c.staleness.policy, kStalenessPolicyNames,
            "apply stale gradients as they are, drop those staler than `bound`, or scale them "
            "by 1 / staleness");
    v.Field("bound", &c.staleness.bound, IntRange{0, 1 << 30},
            "the largest staleness `drop` accepts");
    v.Field("dc_lambda", &c.staleness.dc_lambda, RealRange{0, false, 1e3},
            "DC-ASGD delay compensation (downpour, ssp): a gradient g computed on the weights "
            "w' a worker pulled is applied as g + λ g² (w − w'); costs each server one copy of "
            "its shard per worker");
  });
  v.Section("optimizer", "(applied by the servers)", [&] {
    v.Field("type", &c.optimizer.type, kOptimizerNames,
            "the server-side update (not used by `easgd`/`eamsgd`)");
    v.Field("learning_rate", &c.optimizer.learning_rate, RealRange{0, true, 1e3},
            "η (SGD, momentum, Adam) or γ (Adagrad)");
    v.Field("weight_decay", &c.optimizer.weight_decay, RealRange{0, false, 1},
            "L2 weight decay λ: each gradient g becomes g + λ w before the update, on the "
            "servers' optimizer and in the workers' local steps (`easgd`, `eamsgd`, "
            "`downpour.local_learning_rate`)");
    v.Field("momentum", &c.optimizer.momentum, RealRange{0, false, 0.999999}, "μ (momentum only)");
    v.Field("lower_momentum_with_workers", &c.optimizer.lower_momentum_with_workers, Flag{},
            "momentum under `downpour` or `ssp` with W workers: the servers use max(0, μ − (1 − "
            "1/W)), taking off the implicit momentum asynchrony adds (Mitliagkas et al. 2016): "
            "μ at 1 worker, μ − 0.5 at 2, 0 from 1/(1 − μ) workers on");
    v.Field("epsilon", &c.optimizer.epsilon, RealRange{0, true, 1}, "ε (Adagrad, Adam)");
    v.Field("initial_accumulator", &c.optimizer.initial_accumulator, RealRange{0, false, 1e6},
            "starting value of Adagrad's Σg²");
    v.Field("beta1", &c.optimizer.beta1, RealRange{0, false, 0.999999},
            "Adam's first-moment decay rate");
    v.Field("beta2", &c.optimizer.beta2, RealRange{0, false, 0.999999},
            "Adam's second-moment decay rate; its bias correction counts each chunk's own "
            "updates");
  });
}

template <class V>
void VisitRuntime(JobConfig& c, V& v) {
  v.Section("evaluation", "", [&] {
    v.Field("interval_seconds", &c.evaluation.interval_seconds, RealRange{0, true, 1e6},
            "time between evaluations");
    v.Field("batch_size", &c.evaluation.batch_size, IntRange{1, 1 << 20},
            "test examples per forward pass");
    v.Field("by_program", &c.evaluation.by_program, Flag{},
            "the worker program's own evaluation function scores the weights "
            "(`monsoon.torch.init(module, evaluate=...)`) instead of the job's test data, which "
            "it then does not need; only with `cluster.worker_program`");
  });
  v.Section("trace", "", [&] {
    v.Field("steps", &c.trace.steps, IntRange{0, 1000000},
            "each worker traces its first this many steps after every start into `trace.json` "
            "(see [Outputs](#outputs)); 0 writes no trace at all");
  });
  v.Section("transport", "", [&] {
    v.Field("chunk_kib", &c.transport.chunk_kib, IntRange{4, 256 * 1024},
            "largest chunk of the flat parameter space");
    v.Field("max_in_flight", &c.transport.max_in_flight, IntRange{1, 64},
            "chunk RPCs in flight per server");
    v.Field("channels_per_server", &c.transport.channels_per_server, IntRange{1, 8},
            "TCP connections per server; chunks alternate between them");
    v.Field("rpc_timeout_seconds", &c.transport.rpc_timeout_seconds, RealRange{0, true, 3600},
            "deadline of every RPC");
    v.Field("rendezvous_timeout_seconds", &c.transport.rendezvous_timeout_seconds,
            RealRange{0, true, 3600}, "how long clients wait for servers to publish their address");
    v.Field("overlap", &c.transport.overlap, kOverlapNames,
            "overlap a worker's communication with its compute: `push` sends step t's gradient "
            "during step t + 1 (any algorithm; the servers still order it before any pull that "
            "must see it; EASGD's exchange runs during the steps after it, and its force is "
            "applied after the first step that ends with it arrived: at least one step and at "
            "most τ late, since the next exchange waits for it); `push_pull` (Downpour only) "
            "has that push bring back the weights for step t + 2 in its reply, so a step "
            "computes with weights that miss only the previous step's gradient (one step "
            "staler than without overlap), with one round trip per chunk and step; with "
            "`downpour.n_push` / `n_fetch` above 1, a push brings weights back only when a "
            "fetch falls in the steps they would serve, and other fetches pull. Worth it when "
            "every worker has a core or GPU of its own; see [Performance](#performance)");
    v.Field("pull_with_push", &c.transport.pull_with_push, Flag{},
            "Downpour without overlap: each push brings the chunk's weights back in its reply "
            "(one round trip per chunk and step instead of two). The weights are as of the "
            "push, one round trip older than a separate pull's: where more processes than "
            "cores make a round trip wait for the scheduler, staleness rises");
    v.Field("compression", &c.transport.compression, kCompressionNames,
            "how pushed gradients travel: float32; IEEE half floats (half the bytes; values "
            "beyond ±65504 saturate); or per chunk only the `topk_fraction` largest-magnitude "
            "entries as index/value pairs, the rest carried over to the worker's next push "
            "(error feedback). EASGD exchanges are not compressed");
    v.Field("topk_fraction", &c.transport.topk_fraction, RealRange{0, true, 1},
            "the share of each chunk's entries a `topk` push sends");
    v.Field("local", &c.transport.local, kLocalTransportNames,
            "how a worker or evaluator moves chunk payloads to and from a server on its own "
            "host (same kernel boot, network and PID namespace): `auto` through a segment of "
            "shared memory the server makes for it (pushes travel through it whole, pulls read "
            "the server's chunk window; Hello and control calls through gRPC), or gRPC where "
            "none can be mapped; `shm` the "
            "same, but a server elsewhere is an error; `grpc` always through gRPC. See "
            "[Concepts](#concepts)");
  });
}

template <class V>
void VisitCompute(JobConfig& c, V& v) {
  v.Section("compute", "", [&] {
    v.Field("device", &c.compute.device, kDeviceNames,
            "the compute backend: OpenBLAS or cuBLAS (see [GPUs](#gpus))");
    v.Field("threads", &c.compute.threads, IntRange{1, 256},
            "BLAS threads per worker and evaluator (CPU backend)");
    v.Field("precision", &c.compute.precision, kPrecisionNames,
            "the arithmetic of matrix products on a GPU: fp32; `tf32` or `bf16` tensor cores, "
            "whose products round their fp32 operands to 10 or 7 mantissa bits and sum in fp32 "
            "(weights, gradients, the other kernels and the servers stay fp32). The CPU backend "
            "computes in fp32");
    v.Field("gpu_workspace_mib", &c.compute.gpu_workspace_mib, IntRange{1, 1 << 20},
            "the most GPU memory, in MiB, a convolution's workspace takes (CUDA backend): "
            "cuDNN's algorithms are chosen within it; on im2col, larger batches and images go "
            "through it in chunks of examples");
    v.Field("gpu_data_mib", &c.compute.gpu_data_mib, IntRange{0, 1 << 20},
            "the most GPU memory, in MiB, a worker's shard of the training data may take on "
            "its GPU: a shard that fits is uploaded once and each batch gathered there; a "
            "larger one (or data streamed from its files) goes up batch by batch, each during "
            "the step before it. 0: always batch by batch");
    v.Field("cudnn_path", &c.compute.cudnn_path, CudnnPath{},
            Doc("where a GPU worker finds cuDNN 9 for its convolutions, pooling and batch "
                "normalisation: `auto` looks for libcudnn.so.9 on the library path "
                "(`LD_LIBRARY_PATH`), then under `$CUDA_HOME/lib64` and /usr/local/cuda/lib64, "
                "and uses Monsoon's own kernels (im2col) where there is none; `off` always "
                "uses them; an absolute path (the library, or its directory) must load. The "
                "worker's log names the path taken (see [GPUs](#gpus))"));
  });
}

template <class V>
void VisitOperations(JobConfig& c, V& v) {
  v.Section("reliability", "", [&] {
    ReliabilityConfig& r = c.reliability;
    v.Field("heartbeat_seconds", &r.heartbeat_seconds, RealRange{0, true, 60},
            "workers and the evaluator send each server a heartbeat this often");
    v.Field("peer_timeout_seconds", &r.peer_timeout_seconds, RealRange{0, true, 3600},
            Doc("a server gives a worker up (lost) when it has heard nothing from it for this "
                "long")
                .Type("number (0, 3600], ≥ 2 × `heartbeat_seconds`"));
    v.Field("join_timeout_seconds", &r.join_timeout_seconds, RealRange{0, true, 86400},
            Doc("a server gives a worker, or the evaluator, up (lost) that it has never heard "
                "from this long after it started, e.g. a SLURM task that died before "
                "connecting; a late one still joins")
                .Type("number (0, 86400], ≥ `transport.rendezvous_timeout_seconds`"));
    v.Field("worker_loss", &r.worker_loss, kWorkerLossNames,
            "on a lost worker, servers carry on without it, or stop the job with an error "
            "naming it; `auto` stops only `sync` with every worker in the quorum");
    v.Field("worker_restarts", &r.worker_restarts, IntRange{0, 1000},
            "`monsoon run` restarts a worker killed by a signal up to this many times; it "
            "rejoins where the servers last heard from it");
    v.Field("evaluator_restarts", &r.evaluator_restarts, IntRange{0, 1000},
            "`monsoon run` restarts an evaluator killed by a signal up to this many times; the "
            "new process appends to `evaluator.csv` (its `wall_seconds` carry on from the last "
            "row) and writes `params.bin` at the end; 0 stops the job instead");
    v.Field("server_restarts", &r.server_restarts, IntRange{0, 1000},
            "when a server is killed by a signal, `monsoon run` resumes the whole job from the "
            "servers' checkpoints, as `monsoon run --resume` would, up to this many times per "
            "run; 0 stops the job instead");
    v.Field("stall_seconds", &r.stall_seconds, SecondsOrOff{1e6},
            "a worker whose step has computed this long (its forward and backward, or an own "
            "loop's time between two steps; waits on servers do not count) reports where it is "
            "stuck and ends, and the launcher treats it as lost (`worker_restarts`, "
            "`worker_loss`); 0: ten times its longest step so far, at least 120 s, from its "
            "second step on; `off`: no watch, not even of the first step (a stuck worker then "
            "holds the job until `training.timeout_seconds`)");
    v.Field("first_step_seconds", &r.first_step_seconds, RealRange{0, true, 1e6},
            "the same for a worker's first step, which loads, compiles and connects (the first "
            "CUDA call, a DataLoader's workers, lazy imports); after 30 s of it the worker says "
            "it is waiting");
  });
  v.Section("checkpoint", "", [&] {
    v.Field("interval_seconds", &c.checkpoint.interval_seconds, RealRange{0, false, 1e6},
            "servers checkpoint this often (0: only when stopping) and always on the way out");
    v.Field("keep", &c.checkpoint.keep, IntRange{2, 1000},
            "newest checkpoints kept per server (the older ones are the fallback for a damaged "
            "newest)");
  });
}

template <class V>
void VisitDeployment(JobConfig& c, V& v) {
  v.Section("security", "", [&] {
    v.Field("tls_cert", &c.security.tls_cert, Path{},
            "mutual TLS: every role presents this certificate (PEM); all three TLS files or none");
    v.Field("tls_key", &c.security.tls_key, Path{}, "the certificate's private key (PEM)");
    v.Field("tls_ca", &c.security.tls_ca, Path{},
            "the CA (PEM) every role checks its peers' certificates against");
    v.Field("tls_server_name", &c.security.tls_server_name, Text{},
            "the name the certificate must carry (servers are reached by IP address)");
  });
  v.Section("network", "", [&] {
    v.Field("interface", &c.network.interface, Text{},
            "servers bind this interface's IPv4 address (e.g. `ib0`); empty: the address of "
            "the host's name (`monsoon launch`), each emulated host's `eth0` (`hosts: "
            "namespaces`)");
    v.Field("hosts", &c.network.hosts, kHostsKindNames,
            "`monsoon run`: `loopback` (every role on this host), or `namespaces`: each role on "
            "an emulated host of its own (a node's workers on their node's), linked to the "
            "others through a switch (root only; see [Emulated network](#emulated-network))");
    v.Field("link_mbit", &c.network.link_mbit, RealRange{0, false, 1e6},
            "with `hosts: namespaces`, each host's link carries at most this many Mbit/s each "
            "way (the kernel's token bucket filter); 0: no limit");
  });
  v.Section("simulation", "(see [Simulated clusters](#simulated-clusters))", [&] {
    SimulationConfig& m = c.simulation;
    v.Field("enabled", &m.enabled, Flag{},
            "`monsoon run` runs every worker and server in one process on a virtual clock: the "
            "same models, data shards, seeds and server logic, with step and message times "
            "from the settings below");
    v.Field("step_seconds", &m.step_seconds, RealRange{0, false, 1e4},
            "one worker step's compute in simulated seconds, before `stragglers` and "
            "`step_distribution`; 0: measured on this machine for the job's model (then runs "
            "are identical only given the same measurement: summary.json records it)");
    v.Field("step_distribution", &m.step_distribution, kStepDistributionNames,
            "`constant`, or `lognormal`: each step's time is multiplied by a log-normal factor "
            "of mean 1, drawn from (`seed`, worker, step)");
    v.Field("step_sigma", &m.step_sigma, RealRange{0, false, 10},
            "`lognormal`: the standard deviation of the factor's logarithm");
    v.Field("link_gbit", &m.link_gbit, RealRange{0, false, 1e6},
            "each server's link, each way, in Gbit/s, shared equally by the messages it "
            "carries at once; 0: no limit");
    v.Field("latency_ms", &m.latency_ms, RealRange{0, false, 1e5},
            "each message's one-way latency");
    v.Field("apply_gbyte_per_s", &m.apply_gbyte_per_s, RealRange{0, false, 1e6},
            "each server applies this many GB of pushed gradients (or exchanged weights) a "
            "second, one message at a time in arrival order; 0: measured on this machine for "
            "the job's optimizer (summary.json records it)");
  });
  v.Section("slurm", "(used by `monsoon sbatch`)", [&] {
    SlurmConfig& s = c.slurm;
    v.Field("nodes", &s.nodes, IntRange{1, 100000}, "nodes of a homogeneous job");
    v.Field("cpus_per_task", &s.cpus_per_task, IntRange{1, 4096}, "`--cpus-per-task`");
    v.Field("gpus_per_node", &s.gpus_per_node, IntRange{0, 1024},
            "`--gpus-per-node` (of the worker component in a heterogeneous job)");
    v.Field("time", &s.time, Word{},
            Doc("`--time`")
                .Type("sbatch's time: `MINUTES`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S` or "
                      "`UNLIMITED`"));
    v.Field("partition", &s.partition, Word{}, "`--partition` when set");
    v.Field("account", &s.account, Word{}, "`--account` when set");
    v.Field("extra", &s.extra, SbatchOptions{},
            "more `#SBATCH` lines, e.g. `[\"--mail-type=END\"]`");
    v.Field("setup", &s.setup, ShellLines{},
            "shell lines the batch script runs before anything else, for the site's setup, e.g. "
            "`[\"module load cuda/12.4\", \"export OMP_NUM_THREADS=1\"]`");
    v.Field("heterogeneous", &s.heterogeneous, Flag{},
            "servers, workers and evaluator as separate job components");
    v.Field("server_nodes", &s.server_nodes, IntRange{1, 100000}, "nodes of the server component");
    v.Field("worker_nodes", &s.worker_nodes, IntRange{1, 100000}, "nodes of the worker component");
    v.Field("signal_seconds", &s.signal_seconds, IntRange{0, 65535},
            "ask SLURM for SIGUSR1 this long before the time limit (0: none)");
  });
}

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_CONFIG_SCHEMA_H_
