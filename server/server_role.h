// The server role's main: builds this server's shard of the job, serves it over gRPC,
// publishes its address in the run directory, and runs until every client has finished.
#ifndef MONSOON_SERVER_SERVER_ROLE_H_
#define MONSOON_SERVER_SERVER_ROLE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"
#include "server/parameter_server.h"
#include "server/server_metrics.h"

namespace monsoon {

struct ServerRoleOptions {
  int index = 0;
  std::string bind_host = "127.0.0.1";
  // Start from the newest checkpoint in RUN_DIR/checkpoints/server-J that verifies.
  bool resume = false;
};

// OK once all workers (and the evaluator) have finished or been lost; Cancelled when *stop
// becomes true; DeadlineExceeded past training.timeout_seconds; Unavailable when a lost worker
// stops the job (reliability.worker_loss). Checkpoints every checkpoint.interval_seconds and
// once more on the way out (whatever the reason); writes metrics/ledger-server-J.csv.
absl::Status RunServerRole(const JobConfig& config, const RunDir& run_dir,
                           const ServerRoleOptions& options, const std::atomic<bool>* stop);

// OK when a server of the job may hold every connection its cap allows (ServerLimits: twice
// each client's transport.channels_per_server, and 16) within this host's open-file limit
// (its hard limit, which every monsoon process raises itself to), with room for its files;
// otherwise FailedPrecondition naming the settings and the limit.
absl::Status CheckConnectionsFit(const JobConfig& config);

// A server's metrics row (server_metrics.h) of `s`, at `wall_seconds`.
ServerMetricsRow ServerMetricsRowOf(const ParameterServer& logic, const ServerStats& s,
                                    double wall_seconds);
// What a server leaves beside its metrics when it finishes: its staleness histogram and its
// exactly-once ledger (metrics/staleness-server-J.csv, metrics/ledger-server-J.csv).
absl::Status WriteServerTables(const RunDir& run_dir, const ParameterServer& logic,
                               const ServerStats& final_stats);

struct CheckpointedWeights {
  std::vector<float> weights;  // the flat layout
  uint64_t global_step = 0;    // updates applied to every chunk
};
// The job's weights as the servers last checkpointed them (each server's newest checkpoint
// that verifies): the final weights once every server has exited, since a server always
// checkpoints on its way out. NotFound naming a server that left none.
absl::StatusOr<CheckpointedWeights> WeightsFromCheckpoints(const JobConfig& config,
                                                           const RunDir& run_dir);

}  // namespace monsoon

#endif  // MONSOON_SERVER_SERVER_ROLE_H_
