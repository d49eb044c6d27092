#include "worker/worker_role.h"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/compute/compute_backends.h"
#include "core/config/derived_values.h"
#include "core/data/data_shard.h"
#include "core/data/data_source.h"
#include "core/data/dataset.h"
#include "core/metrics/metrics.h"
#include "core/metrics/trace.h"
#include "core/model/model.h"
#include "core/process/out_of_memory.h"
#include "core/process/process_setup.h"
#include "core/run/job_secrets.h"
#include "core/sharding_plan.h"
#include "core/status_macros.h"
#include "worker/evaluator.h"
#include "worker/grpc_ps_client.h"
#include "worker/memory_estimate.h"
#include "worker/training_worker.h"

namespace monsoon {
namespace {}  // namespace

absl::StatusOr<std::unique_ptr<GrpcPsClient>> ConnectToServers(const JobConfig& config,
                                                               const RunDir& run_dir,
                                                               ClientIdentity identity,
                                                               const std::atomic<bool>* stop) {
  MONSOON_ASSIGN_OR_RETURN(ShardingPlan plan, JobShardingPlan(config));
  MONSOON_ASSIGN_OR_RETURN(
      std::vector<std::string> addresses,
      WaitForServerAddresses(run_dir, config.cluster.servers,
                             absl::Seconds(config.transport.rendezvous_timeout_seconds), stop));
  GrpcPsClientOptions options;
  MONSOON_ASSIGN_OR_RETURN(options.secrets, ReadJobSecrets(run_dir, config.security));
  options.heartbeat_interval = absl::Seconds(config.reliability.heartbeat_seconds);
  options.max_in_flight = config.transport.max_in_flight;
  options.channels_per_server = config.transport.channels_per_server;
  options.rpc_timeout = absl::Seconds(config.transport.rpc_timeout_seconds);
  options.compression = config.transport.compression;
  return GrpcPsClient::Connect(addresses, plan, identity, options);
}

namespace {

// `shape` without its dimensions of size 1: [1, 28, 28] -> [28, 28].
Shape WithoutUnitDims(const Shape& shape) {
  Shape out;
  for (const int d : shape) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

// `data`, read from the split `name`, checked against the model's classes or targets.
absl::StatusOr<Dataset> CheckTargets(const JobConfig& config, const std::string& name,
                                     Dataset data) {
  const ModelSpec& m = config.model;
  if (m.loss == LossType::kSoftmaxCrossEntropy && data.num_classes > m.output_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.output_dim is ", m.output_dim, " but ", name, " has ",
                     data.num_classes, " classes (labels 0 to ", data.num_classes - 1, ")"));
  }
  if (m.loss != LossType::kSoftmaxCrossEntropy && data.target_dim != m.output_dim) {
    return absl::InvalidArgumentError(absl::StrCat("model.output_dim is ", m.output_dim, " but ",
                                                   name, " has ", data.target_dim,
                                                   " targets per example"));
  }
  return data;
}

// `make_model`'s model for `config`, checked to have the servers' parameter count.
absl::StatusOr<std::unique_ptr<TrainableModel>> MakeModel(const ModelFactory& make_model,
                                                          const JobConfig& config, int gpu) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<TrainableModel> model, make_model(config, gpu));
  const size_t expected = Model::NumParams(config.model);
  if (model->num_params() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("the model has ", model->num_params(),
                                                   " parameters but the job's servers hold ",
                                                   expected, " (model.num_params)"));
  }
  return model;
}

}  // namespace

namespace {

// The targets a split holds for `m`: class ids, or output_dim regression values.
TargetSpec TargetsOf(const ModelSpec& m) {
  const bool classify = m.loss == LossType::kSoftmaxCrossEntropy;
  return TargetSpec{classify ? 1 : m.output_dim, classify};
}

// OK when a split's examples, of `shape`, fit model `m`; else InvalidArgument naming the split.
absl::Status CheckExampleShape(const ModelSpec& m, const std::string& name, const Shape& shape) {
  const int features = ShapeSize(shape);
  if (features != m.input_dim) {
    return absl::InvalidArgumentError(absl::StrCat("model.input_dim is ", m.input_dim, " but ",
                                                   name, " has ", features,
                                                   " features per example (shape ",
                                                   ShapeText(shape), ")"));
  }
  const Shape data_shape = WithoutUnitDims(shape);
  const Shape model_shape = WithoutUnitDims(m.input_shape);
  if (data_shape.size() > 1 && model_shape.size() > 1 && data_shape != model_shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.input_shape is ", ShapeText(m.input_shape), " but ", name,
        " holds examples of shape ", ShapeText(shape), " (channels first: [C, H, W])"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataSource>> OpenSplit(const JobConfig& config, bool train) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source,
                           OpenDataSource(config.data, train, TargetsOf(config.model)));
  MONSOON_RETURN_IF_ERROR(
      CheckExampleShape(config.model, source->name(), source->example_shape()));
  return source;
}

namespace {

// InvalidArgument when one role's rows of a split (`rows` of `features` and `targets` floats
// each, held as float32) need more memory than this host gives the job.
absl::Status CheckRowsFitHost(const std::string& name, const char* whose, uint64_t rows,
                               int features, int targets) {
  const uint64_t bytes = RowBytes(rows, features, targets);
  const MemoryLimit memory = HostMemoryLimit();
  if (bytes <= memory.bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: %s %d rows of %d features need %.1f GB of memory, more than %s %.1f GB",
                      name, whose, rows, features, bytes / 1e9, memory.source, memory.bytes / 1e9));
}

}  // namespace

absl::StatusOr<DataSizes> CheckData(const JobConfig& config) {
  DataSizes sizes;
  for (const bool train : {true, false}) {
    if (!train && !config.data.HasTestSet()) continue;
    MONSOON_ASSIGN_OR_RETURN(SplitTargets split,
                             ReadSplitTargets(config.data, train, TargetsOf(config.model)));
    const Dataset& t = split.targets;
    MONSOON_RETURN_IF_ERROR(CheckExampleShape(config.model, split.name, t.example_shape));
    const uint64_t rows = t.targets.size() / std::max(t.target_dim, 1);
    // The largest worker's shard (unless streamed), or the evaluator's whole test set.
    const uint64_t shard = (rows + config.cluster.workers - 1) / config.cluster.workers;
    if (!train || !StreamsShard(config, shard, t.feature_dim, t.target_dim)) {
      MONSOON_RETURN_IF_ERROR(
          CheckRowsFitHost(split.name, train ? "each worker's shard of" : "the evaluator's",
                            train ? shard : rows, t.feature_dim, t.target_dim));
    }
    (train ? sizes.train_rows : sizes.test_rows) = rows;
    sizes.feature_dim = t.feature_dim;
    sizes.target_dim = t.target_dim;
    MONSOON_RETURN_IF_ERROR(CheckTargets(config, split.name, std::move(split.targets)).status());
  }
  return sizes;
}

absl::StatusOr<Dataset> LoadSplit(const JobConfig& config, bool train) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source, OpenSplit(config, train));
  const Allocating allocating(absl::StrCat(source->rows(), " rows of ", source->name()));
  MONSOON_ASSIGN_OR_RETURN(Dataset data, source->ReadAll());
  return CheckTargets(config, source->name(), std::move(data));
}

absl::StatusOr<std::vector<uint64_t>> WorkerRows(const JobConfig& config, int index,
                                                 const DataSource& source) {
  std::vector<uint64_t> rows = ShardRows(source.rows(), index, config.cluster.workers, config.seed);
  if (rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", index,
                                                   " has no data: fewer examples than the ",
                                                   config.cluster.workers, " workers"));
  }
  return rows;
}

absl::StatusOr<std::unique_ptr<DataShard>> ReadShard(const JobConfig& config, int index,
                                                     const std::vector<uint64_t>& rows,
                                                     DataSource* source, Dataset* held) {
  LOG(INFO) << "worker " << index << ": reading " << rows.size() << " of " << source->rows()
            << " rows of " << source->name();
  const Allocating allocating(
      absl::StrCat("worker ", index, "'s ", rows.size(), " rows of ", source->name()));
  MONSOON_ASSIGN_OR_RETURN(Dataset read, source->Read(rows));
  MONSOON_ASSIGN_OR_RETURN(*held, CheckTargets(config, source->name(), std::move(read)));
  return std::make_unique<DataShard>(held, index, config.seed);
}

absl::StatusOr<std::unique_ptr<DataShard>> OpenShard(const JobConfig& config, int index,
                                                     Dataset* held) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source, OpenSplit(config, /*train=*/true));
  MONSOON_ASSIGN_OR_RETURN(std::vector<uint64_t> rows, WorkerRows(config, index, *source));
  const int features = ShapeSize(source->example_shape());
  const int target_dim = TargetsOf(config.model).columns;
  if (!StreamsShard(config, rows.size(), features, target_dim)) {
    return ReadShard(config, index, rows, source.get(), held);
  }
  // The targets alone are read now, to check them against the model.
  MONSOON_ASSIGN_OR_RETURN(Dataset targets, source->ReadTargets());
  MONSOON_RETURN_IF_ERROR(CheckTargets(config, source->name(), std::move(targets)).status());
  LOG(INFO) << "worker " << index << ": streaming " << rows.size() << " of " << source->rows()
            << " rows of " << source->name() << " batch by batch (they need "
            << RowBytes(rows.size(), features, target_dim) / (1 << 20)
            << " MiB, more than data.memory_budget_mib's "
            << (ShardMemoryBudget(config.data) >> 20) << ")";
  return std::make_unique<DataShard>(std::move(source), std::move(rows), index, config.seed);
}

absl::StatusOr<std::unique_ptr<TrainableModel>> NativeModel(const JobConfig& config, int gpu) {
  MONSOON_ASSIGN_OR_RETURN(BackendSelection selection, MakeComputeBackend(config.compute, gpu));
  if (!selection.note.empty()) LOG(INFO) << selection.note;
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                           Model::Create(config.model, std::move(selection.backend)));
  return model;
}

absl::Status RunWorkerRole(const JobConfig& config, const RunDir& run_dir, int index, int gpu,
                           const std::atomic<bool>* stop, const ModelFactory& make_model) {
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<TraceWriter> trace,
      OpenRoleTrace(config.trace.steps, run_dir.trace_dir(), absl::StrCat("worker-", index),
                    kTraceWorkerPid + index, absl::StrCat("worker ", index), WorkerTraceThreads()));
  Dataset held;
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataShard> shard,
                           Traced(trace.get(), kTraceLoop, "load data",
                                  [&] { return OpenShard(config, index, &held); }));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<TrainableModel> model,
                           MakeModel(make_model, config, gpu));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcPsClient> client, Traced(trace.get(), kTraceLoop, "connect", [&] {
        return ConnectToServers(config, run_dir, {ClientRole::kWorker, index, NewIncarnation()},
                                stop);
      }));
  // A restarted worker replays the steps after its resume point: their rows go, and it carries
  // on from the last row its earlier processes wrote before them.
  MONSOON_ASSIGN_OR_RETURN(const ResumePoint resume, client->Resume());
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<WorkerMetricsRecorder> metrics,
      WorkerMetricsRecorder::Open(run_dir, index, static_cast<double>(resume.position.step)));
  LOG(INFO) << "worker " << index << ": " << kAlgorithmNames.Name(config.training.algorithm) << ", "
            << shard->size() << " examples, " << model->num_params() << " parameters, on "
            << model->where();
  TrainingWorker worker(config, index, model.get(), shard.get(), client.get(), metrics.get(),
                        trace.get(), Clock::System(),
                        StateLayout::ForModel(config.model, config.model.state_bound,
                                              ReadInitialManifest(run_dir)));
  absl::StatusOr<WorkerReport> trained = worker.Run(stop);
  if (!trained.ok() && ServersFinished(run_dir, config.cluster.servers)) {
    // Stalled (SIGSTOP, a frozen VM) past the servers' peer timeout, it woke to a job that
    // finished without it: the servers gave it up and counted it lost.
    LOG(WARNING) << "worker " << index << ": the job finished without this worker (the servers "
                 << "gave it up while it was not running); it ran into: "
                 << trained.status().message();
    return absl::OkStatus();
  }
  MONSOON_ASSIGN_OR_RETURN(WorkerReport report, std::move(trained));
  if (trace != nullptr) MONSOON_RETURN_IF_ERROR(trace->status());
  LOG(INFO) << "worker " << index << " done: " << report.steps << " steps, " << report.samples
            << " samples, " << report.pushes << " pushes in " << report.wall_seconds
            << " s, last loss " << report.last_loss;
  return absl::OkStatus();
}

absl::Status RunEvaluatorRole(const JobConfig& config, const RunDir& run_dir, int gpu,
                              const std::atomic<bool>* stop, const ModelFactory& make_model) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> trace,
                           OpenRoleTrace(config.trace.steps, run_dir.trace_dir(), "evaluator",
                                         kTraceEvaluatorPid, "evaluator", {"evaluator"}));
  // Under evaluation.by_program the program's own function scores the weights.
  std::optional<Dataset> test;
  if (!config.evaluation.by_program) {
    MONSOON_ASSIGN_OR_RETURN(test, Traced(trace.get(), 0, "load data", [&] {
                               return LoadSplit(config, /*train=*/false);
                             }));
  }
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<TrainableModel> model,
                           MakeModel(make_model, config, gpu));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcPsClient> client, Traced(trace.get(), 0, "connect", [&] {
        return ConnectToServers(config, run_dir, {ClientRole::kEvaluator, 0}, stop);
      }));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<CsvMetricsWriter> metrics,
                           CsvMetricsWriter::Create(run_dir.evaluator_metrics_path(),
                                                    ColumnNames<EvaluatorMetricsRow>()));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<EventFileWriter> events,
                           EventFileWriter::Create(run_dir.tensorboard_dir("evaluator")));
  metrics->MirrorTo(std::move(events), "global_step");
  // A restarted evaluator's clock carries on from the last row its earlier processes wrote.
  MONSOON_ASSIGN_OR_RETURN(
      const std::optional<EvaluatorMetricsRow> last,
      RowFrom<EvaluatorMetricsRow>(metrics->continued_from(), run_dir.evaluator_metrics_path()));
  Evaluator evaluator(model.get(), test.has_value() ? &*test : nullptr, client.get(),
                      config.evaluation.batch_size, metrics.get(), trace.get(),
                      last.has_value() ? last->wall_seconds : 0);
  MONSOON_ASSIGN_OR_RETURN(
      EvalResult final_result,
      evaluator.RunUntilWorkersFinish(absl::Seconds(config.evaluation.interval_seconds), stop));
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(
      run_dir.params_path(), std::string(reinterpret_cast<const char*>(final_result.params.data()),
                                         final_result.params.size() * sizeof(float))));
  if (trace != nullptr) MONSOON_RETURN_IF_ERROR(trace->status());
  LOG(INFO) << "evaluator: final test loss " << final_result.test_loss << ", accuracy "
            << final_result.test_accuracy << " at global step " << final_result.global_step;
  return absl::OkStatus();
}

}  // namespace monsoon
