// The job configuration: one YAML file describes a whole job, one struct per section. Its
// fields are declared once in config_schema.h; config_reader.h reads them, config_writer.h
// writes them, config_validation.h holds the rules between them and derived_values.h the
// values computed from several.
#ifndef MONSOON_CORE_CONFIG_JOB_CONFIG_H_
#define MONSOON_CORE_CONFIG_JOB_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/compression.h"
#include "core/process/shared_segment.h"
#include "core/compute/compute_config.h"
#include "core/data/data_config.h"
#include "core/enum_names.h"
#include "core/model/model.h"
#include "core/optimizer.h"
#include "core/role.h"

namespace monsoon {

// How the tasks of a parallel launch (srun, mpirun) get their roles
// (launcher/cluster/role_assignment.h).
enum class Assignment { kAuto, kCounts, kRanks, kHetGroups };
inline constexpr NamedValue<Assignment> kAssignmentValues[] = {
    {Assignment::kAuto, "auto"},
    {Assignment::kCounts, "counts"},
    {Assignment::kRanks, "ranks"},
    {Assignment::kHetGroups, "het_groups"}};
inline constexpr EnumNames<Assignment> kAssignmentNames{"assignment", kAssignmentValues};

struct ClusterConfig {
  int servers = 1;
  int workers = 1;
  // Consecutive groups of this many workers share a host (a node)...
  int workers_per_node = 1;
  // ... and push once per step, their gradients summed (worker/node_aggregation.h).
  bool aggregate_per_node = false;
  bool evaluator = true;
  Assignment assignment = Assignment::kAuto;
  std::vector<RoleKind> ranks;  // explicit rank -> role map, one entry per rank
  // The program the worker and evaluator roles run instead of Monsoon's model (model.type:
  // program), and its arguments; relative paths of files beside the job file made absolute.
  std::vector<std::string> worker_program;

  // Worker `worker`'s node.
  int node_of(int worker) const { return worker / workers_per_node; }
  // The clients that push to the servers: the workers, or with aggregate_per_node one per
  // node (the last node may have fewer workers).
  int pushing_clients() const {
    return aggregate_per_node ? (workers + workers_per_node - 1) / workers_per_node : workers;
  }
  // Worker `worker`'s index among the servers' clients: its own, or its node's.
  int client_of(int worker) const { return aggregate_per_node ? node_of(worker) : worker; }
  // Whether worker `worker` pushes to the servers: every worker, or with aggregate_per_node
  // each node's first (its pusher).
  bool pushes_to_servers(int worker) const {
    return !aggregate_per_node || worker % workers_per_node == 0;
  }
};

// Where servers listen when started by `monsoon launch` (`monsoon run` always uses loopback).
// Where `monsoon run` puts its roles: all on this host's loopback, or each on an emulated host
// of its own (launcher/emulation/emulated_hosts.h: a network namespace, root only).
enum class HostsKind { kLoopback, kNamespaces };
inline constexpr NamedValue<HostsKind> kHostsKindValues[] = {
    {HostsKind::kLoopback, "loopback"}, {HostsKind::kNamespaces, "namespaces"}};
inline constexpr EnumNames<HostsKind> kHostsKindNames{"hosts", kHostsKindValues};

struct NetworkConfig {
  // Bind to this interface's IPv4 address (e.g. "ib0"); empty: the address of the host name
  // (`monsoon launch`), or each emulated host's link, eth0.
  std::string interface;
  HostsKind hosts = HostsKind::kLoopback;
  double link_mbit = 0;  // emulated hosts: each link's rate each way (tc tbf); 0: no limit
};

// A simulated cluster (launcher/simulation/): every role in one process on a virtual clock.
enum class StepDistribution { kConstant, kLogNormal };
inline constexpr NamedValue<StepDistribution> kStepDistributionValues[] = {
    {StepDistribution::kConstant, "constant"}, {StepDistribution::kLogNormal, "lognormal"}};
inline constexpr EnumNames<StepDistribution> kStepDistributionNames{"step_distribution",
                                                                    kStepDistributionValues};
struct SimulationConfig {
  bool enabled = false;
  double step_seconds = 0;  // one worker step's compute; 0: measured on this machine
  StepDistribution step_distribution = StepDistribution::kConstant;
  double step_sigma = 0.5;  // lognormal: the log's standard deviation (mean factor 1)
  double link_gbit = 10;    // each server's link, each way, shared by its messages; 0: no limit
  double latency_ms = 0.05;  // each message's one-way latency
  // Each server's update rate, GB of pushed gradient (or exchanged weights) a second, one
  // message at a time; 0: measured on this machine for the job's optimizer.
  double apply_gbyte_per_s = 0;
};

// The `monsoon sbatch` script: resources to ask SLURM for.
struct SlurmConfig {
  int nodes = 1;  // homogeneous jobs
  int cpus_per_task = 1;
  int gpus_per_node = 0;  // homogeneous jobs; the worker component of heterogeneous ones
  std::string time = "00:30:00";
  std::string partition;
  std::string account;
  std::vector<std::string> extra;  // more #SBATCH options, e.g. "--mail-type=END"
  std::vector<std::string> setup;  // shell lines the batch script runs first ("module load ...")
  bool heterogeneous = false;      // servers, workers (and evaluator) as separate components
  int server_nodes = 1;            // heterogeneous: nodes of the server component
  int worker_nodes = 1;            // heterogeneous: nodes of the worker component
  int signal_seconds = 60;         // SIGUSR1 this long before the time limit
};

// How workers and servers combine their work (the math is in README "Comparing algorithms").
enum class Algorithm { kDownpour, kSync, kSsp, kEasgd, kEamsgd };
inline constexpr NamedValue<Algorithm> kAlgorithmValues[] = {{Algorithm::kDownpour, "downpour"},
                                                             {Algorithm::kSync, "sync"},
                                                             {Algorithm::kSsp, "ssp"},
                                                             {Algorithm::kEasgd, "easgd"},
                                                             {Algorithm::kEamsgd, "eamsgd"}};
inline constexpr EnumNames<Algorithm> kAlgorithmNames{"algorithm", kAlgorithmValues};

struct TrainingConfig {
  Algorithm algorithm = Algorithm::kDownpour;
  int epochs = 1;
  int batch_size = 64;
  // When > 0, each worker stops after this many steps even if epochs remain (benchmarks,
  // smoke runs of large models).
  int max_steps = 0;
  double timeout_seconds = 1800;  // the launcher ends a job that runs longer
  // Scales every learning rate of the job by the epoch it is used at (LearningRateScale): the
  // servers' optimizer.learning_rate, the workers' easgd.learning_rate and
  // downpour.local_learning_rate.
  LearningRateSchedule learning_rate_schedule = LearningRateSchedule::kConstant;
  double warmup_epochs = 0;  // linear learning-rate warm-up (LearningRatePlan)
};
// The settings that keep training from diverging, as a job's messages advise them (a
// collapse to chance level, a gradient that overflowed).
inline constexpr char kDivergenceRemedies[] =
    "lower optimizer.learning_rate, or use training.learning_rate_schedule: cosine, fewer "
    "workers or training.algorithm: sync";

// Emulated heterogeneity: workers made slower on purpose, to study the algorithms under
// stragglers. Applied in the worker loop after each step's compute, as a sleep.
enum class DelayDistribution { kFixed, kExponential };
struct StragglersConfig {
  std::vector<int> slow_workers;  // these workers' compute takes slow_factor times as long
  double slow_factor = 1;
  // Each step of every worker is delayed with this probability, by delay_ms (fixed) or a
  // draw with that mean (exponential); decided by (seed, worker, step).
  double probability = 0;
  double delay_ms = 100;
  DelayDistribution distribution = DelayDistribution::kExponential;
};
inline constexpr NamedValue<DelayDistribution> kDelayDistributionValues[] = {
    {DelayDistribution::kFixed, "fixed"}, {DelayDistribution::kExponential, "exponential"}};
inline constexpr EnumNames<DelayDistribution> kDelayDistributionNames{"distribution",
                                                                      kDelayDistributionValues};

// Downpour-SGD (Dean et al. 2012).
struct DownpourConfig {
  int n_fetch = 1;  // pull the server weights every n_fetch steps
  int n_push = 1;   // push the gradients accumulated over n_push steps
  // When > 0 the worker also applies each gradient to its own copy (plain SGD at this rate)
  // between fetches; 0 leaves the local copy as last pulled.
  double local_learning_rate = 0;
  // Warm start: worker 0 trains alone for this many steps before the others begin.
  int warm_start_steps = 0;
};

// What sync does with a gradient computed on weights an update has since replaced.
enum class LateGradients { kDrop, kFold };
inline constexpr NamedValue<LateGradients> kLateGradientsValues[] = {
    {LateGradients::kDrop, "drop"}, {LateGradients::kFold, "fold"}};
inline constexpr EnumNames<LateGradients> kLateGradientsNames{"late-gradient rule",
                                                              kLateGradientsValues};

// Synchronous SGD (BSP): each update averages one gradient from each of `quorum` workers.
struct SyncConfig {
  int quorum = 0;  // K of the N workers; 0 means all of them (no backup workers)
  double backup_fraction = 0;  // with quorum 0: K = N - ceil(backup_fraction * N)
  // Drop a late gradient, or fold it into the next update with weight 1 / (1 + staleness).
  LateGradients late_gradients = LateGradients::kDrop;
};

// Stale synchronous parallel: a worker may start step c only when every live worker has
// pushed at least c - bound times.
struct SspConfig {
  int bound = 2;
};

// Elastic averaging SGD (Zhang, Choromanska & LeCun 2015), and EAMSGD with Nesterov momentum.
struct EasgdConfig {
  int tau = 4;                  // local steps between elastic exchanges
  double alpha = 0;             // elastic force; 0 means beta / live workers
  double beta = 0.9;            // used when alpha is 0
  double learning_rate = 0.01;  // the workers' local step size
  double momentum = 0.99;       // EAMSGD's Nesterov momentum delta
};

enum class StalenessPolicy { kAccept, kDrop, kScale };
inline constexpr NamedValue<StalenessPolicy> kStalenessPolicyValues[] = {
    {StalenessPolicy::kAccept, "accept"},
    {StalenessPolicy::kDrop, "drop"},
    {StalenessPolicy::kScale, "scale"}};
inline constexpr EnumNames<StalenessPolicy> kStalenessPolicyNames{"staleness policy",
                                                                  kStalenessPolicyValues};

// What servers do with a pushed gradient computed on weights that have since changed
// (downpour and ssp; staleness = server version now - the version the gradient was computed on).
struct StalenessConfig {
  StalenessPolicy policy = StalenessPolicy::kAccept;  // drop: above bound; scale: 1 / staleness
  int bound = 8;  // the drop policy's largest accepted staleness
  // DC-ASGD delay compensation (Zheng et al. 2017) when > 0: a gradient g computed on weights
  // w_pulled is applied as g + dc_lambda * g * g * (w_now - w_pulled), elementwise.
  double dc_lambda = 0;
};

struct EvaluationConfig {
  double interval_seconds = 2;
  int batch_size = 1000;
  // The worker program scores the weights with its own function (TrainableModel::ScoreItself)
  // instead of the job's test data.
  bool by_program = false;
};

// The job's Chrome trace (RUN_DIR/trace.json, README "Outputs"): servers record checkpoints
// and peers lost or back, the evaluator every evaluation, and each worker its first `steps`
// steps after every start (0: none).
struct TraceConfig {
  int steps = 200;
};

// What a worker overlaps with its compute (README's configuration reference has the details).
enum class Overlap { kNone, kPush, kPushPull };
inline constexpr NamedValue<Overlap> kOverlapValues[] = {
    {Overlap::kNone, "none"}, {Overlap::kPush, "push"}, {Overlap::kPushPull, "push_pull"}};
inline constexpr EnumNames<Overlap> kOverlapNames{"overlap", kOverlapValues};

struct TransportConfig {
  int chunk_kib = 1024;             // largest chunk of the flat parameter space
  int max_in_flight = 16;           // chunk RPCs in flight per server
  int channels_per_server = 2;      // TCP connections per server
  double rpc_timeout_seconds = 30;  // deadline of every RPC
  double rendezvous_timeout_seconds = 60;
  Overlap overlap = Overlap::kNone;
  bool pull_with_push = true;  // Downpour without overlap: each push's reply brings weights
  Compression compression = Compression::kNone;
  double topk_fraction = 0.01;
  LocalTransport local = LocalTransport::kAuto;  // chunk payloads to servers on this host
};

// What servers do when a worker is lost: "auto" stops sync with every worker in the quorum
// and continues everything else.
enum class WorkerLoss { kAuto, kContinue, kStop };
inline constexpr NamedValue<WorkerLoss> kWorkerLossValues[] = {
    {WorkerLoss::kAuto, "auto"}, {WorkerLoss::kContinue, "continue"}, {WorkerLoss::kStop, "stop"}};
inline constexpr EnumNames<WorkerLoss> kWorkerLossNames{"worker-loss rule", kWorkerLossValues};

// Failures: heartbeats, lost peers, restarted workers (README "Reliability and security").
struct ReliabilityConfig {
  double heartbeat_seconds = 1;      // workers and the evaluator tell each server they live
  double peer_timeout_seconds = 10;  // a server gives a worker up after this long unheard
  // A server gives a worker (or the evaluator) up that it has never heard from this long after
  // it started: one that died before connecting would otherwise hold the job until
  // training.timeout_seconds. At least transport.rendezvous_timeout_seconds.
  double join_timeout_seconds = 300;
  WorkerLoss worker_loss = WorkerLoss::kAuto;
  // `monsoon run` restarts a worker that dies up to this many times (per worker); the new
  // process rejoins the running job where the servers last heard from it.
  int worker_restarts = 0;
  // `monsoon run` restarts an evaluator killed by a signal up to this many times; the new
  // process continues evaluator.csv and writes params.bin at the end (else the job stops).
  int evaluator_restarts = 0;
  // `monsoon run` resumes the whole job from the servers' checkpoints when a server dies by
  // a signal, up to this many times per run: every role restarts, servers from their newest
  // checkpoints, workers after the last push every server has (as `monsoon run --resume`).
  int server_restarts = 0;
  // A worker whose step's compute has run this long ends itself as stalled (StallWatch);
  // 0: ten times its longest step so far, at least 120 s, from its second step on;
  // kStallWatchOff (`off`): no watch at all, the first step's bound included.
  double stall_seconds = 0;
  // The same bound for a worker's first step, whatever stall_seconds is.
  double first_step_seconds = 600;
};

// reliability.stall_seconds: `off`.
inline constexpr double kStallWatchOff = -1;

// Server checkpoints (shard weights, optimizer state, versions, clocks, workers' data
// positions) in RUN_DIR/checkpoints/server-J/, written atomically with a checksum.
struct CheckpointConfig {
  double interval_seconds = 30;  // 0: only when stopped by a signal and at the end
  int keep = 2;                  // newest checkpoints kept per server (>= 2: a fallback)
};

// The job token (RUN_DIR/token, or $MONSOON_JOB_TOKEN) guards every RPC; TLS is optional.
struct SecurityConfig {
  // PEM files; all three or none. Every role presents tls_cert and checks its peer against
  // tls_ca (mutual TLS); the certificate must name tls_server_name.
  std::string tls_cert, tls_key, tls_ca;
  std::string tls_server_name = "monsoon";
  bool tls() const { return !tls_cert.empty(); }
};

struct JobConfig {
  std::string job = "job";
  uint64_t seed = 1;
  ClusterConfig cluster;
  ModelSpec model;
  DataConfig data;
  TrainingConfig training;
  StragglersConfig stragglers;
  DownpourConfig downpour;
  SyncConfig sync;
  SspConfig ssp;
  EasgdConfig easgd;
  StalenessConfig staleness;
  OptimizerSpec optimizer;  // applied by the servers to pushed gradients
  EvaluationConfig evaluation;
  TraceConfig trace;
  TransportConfig transport;
  ComputeConfig compute;
  ReliabilityConfig reliability;
  CheckpointConfig checkpoint;
  SecurityConfig security;
  NetworkConfig network;
  SimulationConfig simulation;
  SlurmConfig slurm;

  size_t chunk_floats() const { return static_cast<size_t>(transport.chunk_kib) * 1024 / 4; }
};

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_JOB_CONFIG_H_
