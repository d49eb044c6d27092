#include "server/server_role.h"

#include <sys/resource.h>

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/metrics.h"
#include "core/model.h"
#include "core/status_macros.h"
#include "server/grpc_parameter_server.h"
#include "server/parameter_server.h"

namespace monsoon {
namespace {

// Writes the histogram as CSV rows (staleness, pushes); the last bucket is "this or more".
absl::Status WriteStalenessHistogram(const std::string& path,
                                     const std::vector<uint64_t>& histogram) {
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<CsvMetricsWriter> out,
                           CsvMetricsWriter::Create(path, {"staleness", "pushes"}));
  for (size_t s = 0; s < histogram.size(); ++s) {
    MONSOON_RETURN_IF_ERROR(
        out->Append({static_cast<double>(s), static_cast<double>(histogram[s])}));
  }
  return absl::OkStatus();
}

// This process's peak resident set size.
uint64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace

absl::Status RunServerRole(const JobConfig& config, const RunDir& run_dir,
                           const ServerRoleOptions& options, const std::atomic<bool>* stop) {
  MONSOON_ASSIGN_OR_RETURN(ShardingPlan plan, JobShardingPlan(config));
  ParameterServer logic(options.index, plan, config.model, config.seed,
                        ServerRules::FromConfig(config), config.cluster.workers,
                        config.cluster.evaluator);
  MONSOON_ASSIGN_OR_RETURN(std::string token, ReadJobToken(run_dir));
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<GrpcParameterServer> server,
                           GrpcParameterServer::Start(&logic, options.bind_host, token));
  MONSOON_RETURN_IF_ERROR(PublishServerAddress(run_dir, options.index, server->address()));
  std::cout << "server " << options.index << " serving " << plan.ChunksOf(options.index).size()
            << " chunks (" << plan.FloatsOf(options.index) << " parameters) on "
            << server->address() << std::endl;

  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<CsvMetricsWriter> metrics,
      CsvMetricsWriter::Create(
          absl::StrCat(run_dir.metrics_dir(), "/server-", options.index, ".csv"),
          {"wall_seconds", "pushes_applied", "pushes_dropped", "pushes_rejected", "pulls_served",
           "bytes_received", "bytes_sent", "workers_finished", "mean_staleness", "state_bytes",
           "peak_rss_bytes"}));
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(config.training.timeout_seconds);
  auto record = [&]() {
    const ServerStats s = logic.Stats();
    return metrics->Append(
        {absl::ToDoubleSeconds(absl::Now() - start), static_cast<double>(s.pushes_applied),
         static_cast<double>(s.pushes_dropped), static_cast<double>(s.pushes_rejected),
         static_cast<double>(s.pulls_served), static_cast<double>(s.bytes_received),
         static_cast<double>(s.bytes_sent), static_cast<double>(s.workers_finished),
         HistogramMean(s.staleness_histogram), static_cast<double>(logic.state_bytes()),
         static_cast<double>(PeakRssBytes())});
  };
  absl::Status result = absl::OkStatus();
  while (!logic.WaitAllFinished(absl::Seconds(1))) {
    MONSOON_RETURN_IF_ERROR(record());
    if (stop != nullptr && stop->load()) {
      result = absl::CancelledError("server stopped by signal");
      break;
    }
    if (absl::Now() > deadline) {
      result = absl::DeadlineExceededError(
          absl::StrCat("server ", options.index, ": clients still running after ",
                       config.training.timeout_seconds, " s (training.timeout_seconds)"));
      break;
    }
  }
  MONSOON_RETURN_IF_ERROR(record());
  server->Shutdown();
  MONSOON_RETURN_IF_ERROR(WriteStalenessHistogram(
      absl::StrCat(run_dir.metrics_dir(), "/staleness-server-", options.index, ".csv"),
      logic.Stats().staleness_histogram));
  std::cout << "server " << options.index << ": peak RSS " << PeakRssBytes() / 1048576
            << " MiB for " << logic.state_bytes() / 1048576 << " MiB of weights and optimizer state"
            << std::endl;
  return result;
}

}  // namespace monsoon
