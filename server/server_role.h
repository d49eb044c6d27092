// The server role's main: builds this server's shard of the job, serves it over gRPC,
// publishes its address in the run directory, and runs until every client has finished.
#ifndef MONSOON_SERVER_SERVER_ROLE_H_
#define MONSOON_SERVER_SERVER_ROLE_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "core/job_config.h"
#include "core/run_dir.h"

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

}  // namespace monsoon

#endif  // MONSOON_SERVER_SERVER_ROLE_H_
