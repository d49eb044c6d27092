// What a parameter server needs from the job config: the update rule and the liveness rules.
#ifndef MONSOON_SERVER_SERVER_RULES_H_
#define MONSOON_SERVER_SERVER_RULES_H_

#include "absl/time/time.h"
#include "core/config/job_config.h"
#include "core/model/state_layout.h"
#include "core/optimizer.h"

namespace monsoon {

// How this server updates its chunks: everything it needs from the job config.
struct ServerRules {
  Algorithm algorithm = Algorithm::kDownpour;
  OptimizerSpec optimizer;    // applied to pushed gradients (downpour, ssp, sync rounds)
  StalenessConfig staleness;  // downpour, ssp
  SyncConfig sync;            // sync
  EasgdConfig easgd;          // easgd, eamsgd
  // Scales optimizer.learning_rate by the epoch each gradient was computed at.
  LearningRatePlan learning_rate;
  // A worker unheard (no RPC, no heartbeat) for this long is lost; then the server carries on
  // without it, or fails (Health()) when stop_on_worker_loss.
  absl::Duration peer_timeout = absl::Seconds(10);
  // A worker, or the evaluator, never heard from this long after the server started is lost
  // too (it died before connecting, say); it may still join later.
  absl::Duration join_timeout = absl::Seconds(300);
  bool stop_on_worker_loss = false;
  // The run this server belongs to (RUN_DIR/run_id): stamped into its checkpoints, and a
  // checkpoint with another is refused.
  uint64_t run_id = 0;
  // What each value of the model's state can hold: state pushes and exchanges are checked
  // against it. FromConfig names a Monsoon model's tensors; a worker program's come from its
  // manifest (StateLayout::ForModel).
  StateLayout state;

  static ServerRules FromConfig(const JobConfig& config);
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_SERVER_RULES_H_
