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
