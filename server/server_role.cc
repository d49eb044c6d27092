#include "server/server_role.h"

#include <glog/logging.h>
#include <sys/resource.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/config/derived_values.h"
#include "core/metrics/metrics.h"
#include "core/metrics/trace.h"
#include "core/model/model.h"
#include "core/process/out_of_memory.h"
#include "core/process/process_setup.h"
#include "core/run/checkpoint_file.h"
#include "core/run/job_secrets.h"
#include "core/status_macros.h"
#include "server/grpc_parameter_server.h"
#include "server/parameter_server.h"
#include "server/server_checkpoint.h"
#include "server/server_metrics.h"

namespace monsoon {
namespace {

// The histogram as CSV rows (staleness, pushes) up to the largest staleness seen (a row for 0
// at least); the histogram's last bucket is "this or more".
CsvTable StalenessTable(const std::vector<uint64_t>& histogram) {
  CsvTable table{{"staleness", "pushes"}, {}};
  size_t rows = 1;
  for (size_t s = 0; s < histogram.size(); ++s) {
    if (histogram[s] > 0) rows = s + 1;
  }
  for (size_t s = 0; s < rows; ++s) {
    table.rows.push_back({static_cast<double>(s), static_cast<double>(histogram[s])});
  }
  return table;
}

// The exactly-once ledger (LedgerEntry), one row per chunk and worker.
CsvTable LedgerTable(const std::vector<LedgerEntry>& ledger) {
  CsvTable table{{"chunk", "worker", "processed", "applied", "sequence_sum", "duplicates"}, {}};
  for (const LedgerEntry& e : ledger) {
    table.rows.push_back({static_cast<double>(e.chunk), static_cast<double>(e.worker),
                          static_cast<double>(e.processed), static_cast<double>(e.applied),
                          static_cast<double>(e.sequence_sum), static_cast<double>(e.duplicates)});
  }
  return table;
}

// This process's peak resident set size.
uint64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

// Opens server `index`'s newest checkpoint that verifies, reporting each damaged one it skips.
// NotFound when the server has none; DataLoss when none verifies.
absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenServerCheckpoint(const RunDir& run_dir,
                                                                       int index) {
  std::vector<std::string> skipped;
  auto reader = OpenNewestCheckpoint(run_dir.checkpoint_dir(index), &skipped);
  if (!reader.ok()) return reader.status();
  for (const std::string& why : skipped) {
    LOG(WARNING) << "server " << index << ": " << why << "; took the previous one";
  }
  return reader;
}

// The weights in server `expected.server_index`'s newest checkpoint that verifies; returns its
// smallest chunk version. NotFound when the server left none.
absl::StatusOr<uint64_t> ReadServerWeights(const RunDir& run_dir, const CheckpointHeader& expected,
                                           const ShardingPlan& plan, absl::Span<float> weights) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader,
                           OpenServerCheckpoint(run_dir, expected.server_index));
  return ReadCheckpointWeights(reader.get(), expected, plan, weights);
}

// A server that never wrote a checkpoint starts from the initial weights. One whose
// checkpoints are all damaged, or belong to another run or job layout, is refused.
absl::Status Restore(const RunDir& run_dir, int index, ParameterServer* logic) {
  auto reader = OpenServerCheckpoint(run_dir, index);
  if (absl::IsNotFound(reader.status())) {
    LOG(INFO) << "server " << index << ": no checkpoint in " << run_dir.checkpoint_dir(index)
              << "; resuming from the initial weights";
    return absl::OkStatus();
  }
  absl::Status s = reader.status();
  if (s.ok()) s = logic->LoadCheckpoint(reader->get());
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("server ", index, " cannot resume: ", s.message()));
  }
  LOG(INFO) << "server " << index << ": resumed from " << (*reader)->path();
  return absl::OkStatus();
}

// The job's clients of each server: its workers (or their nodes) and evaluator.
int Clients(const JobConfig& config) {
  return config.cluster.pushing_clients() + (config.cluster.evaluator ? 1 : 0);
}

// Descriptors a server keeps for itself beyond its connections: logs, checkpoints, metrics.
constexpr int kServerOwnFiles = 64;

}  // namespace

absl::Status CheckConnectionsFit(const JobConfig& config) {
  const int cap =
      ServerLimits::MaxConnections(Clients(config), config.transport.channels_per_server);
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_max == RLIM_INFINITY ||
      static_cast<rlim_t>(cap + kServerOwnFiles) <= files.rlim_max) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "each server may hold ", cap, " connections (",
      config.cluster.aggregate_per_node
          ? absl::StrCat(config.cluster.pushing_clients(), " nodes of workers")
          : absl::StrCat("cluster.workers ", config.cluster.workers),
      config.cluster.evaluator ? " and the evaluator" : "",
      ", each with twice "
      "transport.channels_per_server ",
      config.transport.channels_per_server, ", and 16 for tools), more than this host's ",
      files.rlim_max,
      " open files a process (ulimit -Hn) leave room for: fewer channels_per_server, or a "
      "higher hard limit"));
}

namespace {

// What one server role's run works with.
struct ServerRun {
  const JobConfig& config;
  const RunDir& run_dir;
  const int index;
  ParameterServer& logic;
  TraceWriter* const trace;  // nullable
  CsvMetricsWriter* const metrics;
  const absl::Time start = absl::Now();
};

absl::Status WriteCheckpoint(const ServerRun& run) {
  return Traced(run.trace, 0, "checkpoint", [&]() -> absl::Status {
    const absl::Time start = absl::Now();
    MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWriter> out,
                             CheckpointWriter::Begin(run.run_dir.checkpoint_dir(run.index)));
    run.logic.SaveCheckpoint(out.get());
    MONSOON_ASSIGN_OR_RETURN(std::string path, out->Commit(run.config.checkpoint.keep));
    LOG(INFO) << "server " << run.index << ": checkpoint " << path << " ("
              << absl::FormatDuration(absl::Now() - start) << ")";
    return absl::OkStatus();
  });
}

// A checkpoint. One that fails for want of file descriptors or disk space is tried again every
// 0.5 s for up to 10 s: a flood of connections that took every descriptor drains within that
// (GrpcParameterServer caps a plaintext server's connections and closes a TLS server's without
// a handshake after 5 s). The error then
// names the server and, when descriptors ran out, how many are open.
absl::Status Checkpoint(const ServerRun& run) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (true) {
    const absl::Status written = WriteCheckpoint(run);
    if (!absl::IsResourceExhausted(written)) return written;
    const DescriptorUse use = CountDescriptors();
    const std::string why =
        absl::StrCat("server ", run.index, ": checkpoint failed: ", written.message(),
                     use.open >= use.limit - 16 ? absl::StrCat(" (", use.open, " of ", use.limit,
                                                               " file descriptors open: a flood of "
                                                               "connections?)")
                                                : "");
    if (absl::Now() >= give_up) return absl::ResourceExhaustedError(why);
    LOG(WARNING) << why << "; trying again in 0.5 s";
    absl::SleepFor(absl::Milliseconds(500));
  }
}

void LogEvents(const ServerRun& run) {
  for (const std::string& event : run.logic.TakeEvents()) {
    LOG(WARNING) << event;
    if (run.trace != nullptr) run.trace->Instant(0, "peer", absl::Now(), event);
  }
}

}  // namespace

ServerMetricsRow ServerMetricsRowOf(const ParameterServer& logic, const ServerStats& s,
                                    double wall_seconds) {
  ServerMetricsRow row;
  row.wall_seconds = wall_seconds;
  row.pushes_applied = static_cast<double>(s.pushes_applied);
  row.pushes_dropped = static_cast<double>(s.pushes_dropped);
  row.pushes_rejected = static_cast<double>(s.pushes_rejected);
  row.pulls_served = static_cast<double>(s.pulls_served);
  row.bytes_received = static_cast<double>(s.bytes_received);
  row.bytes_sent = static_cast<double>(s.bytes_sent);
  row.workers_finished = s.workers_finished;
  row.mean_staleness = HistogramMean(s.staleness_histogram);
  row.state_bytes = static_cast<double>(logic.state_bytes());
  row.peak_rss_bytes = static_cast<double>(PeakRssBytes());
  row.pushes_duplicate = static_cast<double>(s.pushes_duplicate);
  row.workers_lost = static_cast<double>(s.workers_lost.size());
  return row;
}

absl::Status WriteServerTables(const RunDir& run_dir, const ParameterServer& logic,
                               const ServerStats& final_stats) {
  MONSOON_RETURN_IF_ERROR(
      WriteFileAtomically(run_dir.staleness_path(logic.index()),
                          FormatCsvTable(StalenessTable(final_stats.staleness_histogram))));
  return WriteFileAtomically(run_dir.ledger_path(logic.index()),
                             FormatCsvTable(LedgerTable(logic.Ledger())));
}

namespace {

// Appends a metrics row of `s`; only the final row may show every worker finished or lost
// (ServerMetricsRow).
absl::Status Record(const ServerRun& run, const ServerStats& s, bool final_row) {
  LogEvents(run);
  const size_t workers_done = static_cast<size_t>(s.workers_finished) + s.workers_lost.size();
  if (!final_row && workers_done >= static_cast<size_t>(run.config.cluster.pushing_clients())) {
    return absl::OkStatus();
  }
  return run.metrics->Append(
      RowValues(ServerMetricsRowOf(run.logic, s, absl::ToDoubleSeconds(absl::Now() - run.start))));
}

// Serves until every client has finished or been lost, checkpointing every
// checkpoint.interval_seconds. Returns why it stopped: OK, Cancelled (a stop signal), the
// server's Health() error or DeadlineExceeded (training.timeout_seconds); the outer status is
// an error of the server's own files.
absl::StatusOr<absl::Status> Serve(const ServerRun& run, const std::atomic<bool>* stop) {
  const absl::Time deadline = run.start + absl::Seconds(run.config.training.timeout_seconds);
  const absl::Duration interval = absl::Seconds(run.config.checkpoint.interval_seconds);
  absl::Time next_checkpoint = run.start + interval;
  while (!run.logic.WaitAllFinished(absl::Seconds(1))) {
    MONSOON_RETURN_IF_ERROR(Record(run, run.logic.Stats(), /*final_row=*/false));
    if (stop != nullptr && stop->load()) return absl::CancelledError("server stopped by signal");
    const absl::Status health = run.logic.Health();
    if (!health.ok()) return health;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("server ", run.index, ": clients still running after ",
                       run.config.training.timeout_seconds, " s (training.timeout_seconds)"));
    }
    if (interval > absl::ZeroDuration() && absl::Now() >= next_checkpoint) {
      MONSOON_RETURN_IF_ERROR(Checkpoint(run));
      next_checkpoint = absl::Now() + interval;
    }
  }
  return absl::OkStatus();
}

// With no call in flight any more: the final checkpoint (the server's final state, whether
// the job finished, was stopped by a signal or failed), the final metrics row, the staleness
// histogram and the ledger. Returns `result`, or why every worker was lost.
absl::Status FinishServing(const ServerRun& run, absl::Status result) {
  LogEvents(run);
  const ServerStats final_stats = run.logic.Stats();
  if (result.ok() && final_stats.workers_finished == 0) {
    result = absl::UnavailableError(
        absl::StrCat("server ", run.index,
                     ": every worker was lost and none finished; the weights are "
                     "not trained (continue the run with --resume once the workers can start)"));
  }
  MONSOON_RETURN_IF_ERROR(Checkpoint(run));
  MONSOON_RETURN_IF_ERROR(Record(run, final_stats, /*final_row=*/true));
  MONSOON_RETURN_IF_ERROR(WriteServerTables(run.run_dir, run.logic, final_stats));
  LOG(INFO) << "server " << run.index << ": peak RSS " << PeakRssBytes() / 1048576 << " MiB for "
            << run.logic.state_bytes() / 1048576 << " MiB of weights and optimizer state";
  if (run.trace != nullptr) MONSOON_RETURN_IF_ERROR(run.trace->status());
  return result;
}

// The weights the job starts from: Monsoon's model's for the job's seed, or the worker
// program's as the launcher had it write them (RUN_DIR/initial_params.bin).
absl::StatusOr<InitialValuesFn> JobInitialValues(const JobConfig& config, const RunDir& run_dir,
                                                 size_t num_params) {
  if (config.model.type != ModelType::kProgram) {
    return ModelInitialValues(config.model, config.seed);
  }
  MONSOON_ASSIGN_OR_RETURN(std::vector<float> values,
                           ReadFloatFile(run_dir.initial_params_path(), num_params));
  auto shared = std::make_shared<const std::vector<float>>(std::move(values));
  return [shared](size_t offset, absl::Span<float> out) {
    std::copy_n(shared->begin() + offset, out.size(), out.begin());
  };
}

}  // namespace

absl::Status RunServerRole(const JobConfig& config, const RunDir& run_dir,
                           const ServerRoleOptions& options, const std::atomic<bool>* stop) {
  MONSOON_ASSIGN_OR_RETURN(ShardingPlan plan, JobShardingPlan(config));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<TraceWriter> trace,
      OpenRoleTrace(config.trace.steps, run_dir.trace_dir(), absl::StrCat("server-", options.index),
                    kTraceServerPid + options.index, absl::StrCat("server ", options.index),
                    {"server"}));
  ServerRules rules = ServerRules::FromConfig(config);
  MONSOON_ASSIGN_OR_RETURN(rules.run_id, ReadRunId(run_dir));
  rules.state = StateLayout::ForModel(config.model, config.model.state_bound,
                                      ReadInitialManifest(run_dir));
  MONSOON_ASSIGN_OR_RETURN(const InitialValuesFn initial_values,
                           JobInitialValues(config, run_dir, plan.num_params()));
  const Allocating allocating(absl::StrCat("server ", options.index, "'s ",
                                           plan.FloatsOf(options.index),
                                           " parameters and their optimizer state"));
  ParameterServer logic(options.index, plan, initial_values, rules,
                        config.cluster.pushing_clients(), config.cluster.evaluator);
  if (options.resume) {
    MONSOON_RETURN_IF_ERROR(Traced(trace.get(), 0, "restore checkpoint",
                                   [&] { return Restore(run_dir, options.index, &logic); }));
  }
  MONSOON_ASSIGN_OR_RETURN(JobSecrets secrets, ReadJobSecrets(run_dir, config.security));
  MONSOON_RETURN_IF_ERROR(CheckConnectionsFit(config));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcParameterServer> server,
      GrpcParameterServer::Start(
          &logic, options.bind_host, secrets,
          ServerLimits::For(plan, Clients(config), config.transport.max_in_flight,
                            config.transport.channels_per_server)));
  MONSOON_RETURN_IF_ERROR(PublishServerAddress(run_dir, options.index, server->address()));
  LOG(INFO) << "server " << options.index << " serving " << plan.ChunksOf(options.index).size()
            << " chunks (" << plan.FloatsOf(options.index) << " parameters) on "
            << server->address() << (secrets.tls() ? " (TLS)" : "");
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<CsvMetricsWriter> metrics,
                           CsvMetricsWriter::Create(run_dir.server_metrics_path(options.index),
                                                    ColumnNames<ServerMetricsRow>()));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<EventFileWriter> events,
      EventFileWriter::Create(run_dir.tensorboard_dir(absl::StrCat("server-", options.index))));
  metrics->MirrorTo(std::move(events), "");
  const ServerRun run{config, run_dir, options.index, logic, trace.get(), metrics.get()};
  MONSOON_ASSIGN_OR_RETURN(const absl::Status result, Serve(run, stop));
  server->Shutdown();
  MONSOON_RETURN_IF_ERROR(FinishServing(run, result));
  return MarkServerFinished(run_dir, options.index);
}

absl::StatusOr<CheckpointedWeights> WeightsFromCheckpoints(const JobConfig& config,
                                                           const RunDir& run_dir) {
  MONSOON_ASSIGN_OR_RETURN(ShardingPlan plan, JobShardingPlan(config));
  MONSOON_ASSIGN_OR_RETURN(const uint64_t run_id, ReadRunId(run_dir));
  CheckpointedWeights result;
  result.weights.resize(plan.num_params());
  result.global_step = std::numeric_limits<uint64_t>::max();
  for (int j = 0; j < config.cluster.servers; ++j) {
    const CheckpointHeader expected{run_id,
                                    j,
                                    plan.fingerprint(),
                                    static_cast<int64_t>(config.training.algorithm),
                                    config.cluster.pushing_clients(),
                                    static_cast<int64_t>(plan.ChunksOf(j).size())};
    const absl::StatusOr<uint64_t> version =
        ReadServerWeights(run_dir, expected, plan, absl::MakeSpan(result.weights));
    if (absl::IsNotFound(version.status())) {
      return absl::NotFoundError(
          absl::StrCat("server ", j, " left no checkpoint in ", run_dir.checkpoint_dir(j)));
    }
    if (!version.ok()) {
      return absl::Status(version.status().code(),
                          absl::StrCat("server ", j, ": ", version.status().message()));
    }
    result.global_step = std::min(result.global_step, *version);
  }
  return result;
}

}  // namespace monsoon
