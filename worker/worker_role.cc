#include "worker/worker_role.h"

#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/compute/compute_backends.h"
#include "core/config/derived_values.h"
#include "core/data/data_shard.h"
#include "core/data/data_source.h"
#include "core/data/dataset.h"
#include "core/job/job_data.h"
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
#include "worker/node_aggregation.h"
#include "worker/training_worker.h"

namespace monsoon {
namespace {

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

// The gRPC client of `identity` itself (a worker of a node connects as its node).
absl::StatusOr<std::unique_ptr<GrpcPsClient>> ConnectDirectly(const JobConfig& config,
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
  options.local = config.transport.local;
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<GrpcPsClient> client,
                           GrpcPsClient::Connect(addresses, plan, identity, options));
  const std::vector<int> shared = client->SharedMemoryServers();
  const std::vector<int> windows = client->WindowServers();
  LOG(INFO) << "chunk payloads through shared memory with " << shared.size() << " of "
            << client->plan().num_servers() << " servers (" << absl::StrJoin(shared, ", ")
            << "), through gRPC with the rest; pulls read the chunk windows of " << windows.size()
            << " (" << absl::StrJoin(windows, ", ") << ") without a call";
  return client;
}

// How worker `worker` meets the other workers of its node.
NodeOptions NodeOptionsOf(const JobConfig& config, int worker) {
  const ClusterConfig& cluster = config.cluster;
  NodeOptions options;
  options.node = cluster.node_of(worker);
  options.first_worker = options.node * cluster.workers_per_node;
  options.workers = std::min(cluster.workers_per_node, cluster.workers - options.first_worker);
  options.mean = config.training.algorithm == Algorithm::kSync;
  options.stop_on_loss = StopsOnWorkerLoss(config);
  options.heartbeat = absl::Seconds(config.reliability.heartbeat_seconds);
  options.peer_timeout = absl::Seconds(config.reliability.peer_timeout_seconds);
  options.join_timeout = absl::Seconds(config.reliability.join_timeout_seconds);
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PsClient>> ConnectToServers(const JobConfig& config,
                                                           const RunDir& run_dir,
                                                           ClientIdentity identity,
                                                           const std::atomic<bool>* stop) {
  if (identity.role != RoleKind::kWorker || !config.cluster.aggregate_per_node) {
    return ConnectDirectly(config, run_dir, identity, stop);
  }
  const NodeOptions node = NodeOptionsOf(config, identity.index);
  if (identity.index != node.first_worker) {
    MONSOON_ASSIGN_OR_RETURN(ShardingPlan plan, JobShardingPlan(config));
    MONSOON_ASSIGN_OR_RETURN(
        std::unique_ptr<NodeMember> member,
        NodeMember::Join(plan, node, identity.index, run_dir.node_path(node.node),
                         absl::Seconds(config.transport.rendezvous_timeout_seconds), stop));
    LOG(INFO) << "worker " << identity.index << " pushes through worker " << node.first_worker
              << " with the " << node.workers << " workers of node " << node.node;
    return member;
  }
  identity.index = node.node;  // the servers' client
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<GrpcPsClient> servers,
                           ConnectDirectly(config, run_dir, identity, stop));
  if (node.workers == 1) return servers;
  LOG(INFO) << "worker " << node.first_worker << " pushes for the " << node.workers
            << " workers of node " << node.node;
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<NodePusher> pusher,
      NodePusher::Start(std::move(servers), node, run_dir.node_path(node.node)));
  return pusher;
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
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataShard> shard,
                           Traced(trace.get(), kTraceLoop, "load data",
                                  [&] { return OpenShard(config, index); }));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<TrainableModel> model,
                           MakeModel(make_model, config, gpu));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<PsClient> client, Traced(trace.get(), kTraceLoop, "connect", [&] {
        return ConnectToServers(config, run_dir, {RoleKind::kWorker, index, NewIncarnation()},
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
      std::unique_ptr<PsClient> client, Traced(trace.get(), 0, "connect", [&] {
        return ConnectToServers(config, run_dir, {RoleKind::kEvaluator, 0}, stop);
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
