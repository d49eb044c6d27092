// Per algorithm, which steps of a worker pull the weights and what each pull waits for:
// - downpour: every n_fetch steps, without waiting (but for the warm start's first pull);
// - sync: every step, once the rounds holding this worker's last push are applied;
// - ssp: every step, once the slowest live worker is at most ssp_bound pushes behind;
// - easgd / eamsgd: the loop pulls the centre once, at its start.
#ifndef MONSOON_WORKER_PULL_SCHEDULE_H_
#define MONSOON_WORKER_PULL_SCHEDULE_H_

#include <cstdint>

#include "worker/ps_client.h"
#include "worker/worker_rules.h"

namespace monsoon {

// Immutable; thread-compatible.
class PullSchedule {
 public:
  // `worker` is this worker's index; `num_chunks` the plan's; `resumed_after` the pushes the
  // servers had processed from this worker when this process started (0 for a fresh start).
  PullSchedule(const WorkerRules& rules, int worker, int num_chunks, uint64_t resumed_after);

  // Whether the worker pulls before `step` (0-based, counted across restarts).
  bool PullsBefore(int64_t step) const;
  // Whether any step in [first, first + count) pulls.
  bool PullsWithin(int64_t first, int count) const;
  // What the pull before `step` waits for; `pushed_on` holds the chunk versions this worker's
  // last push was computed on (empty before its first push of this process).
  PullWait WaitFor(int64_t step, const ChunkVersions& pushed_on) const;

 private:
  const WorkerRules& rules_;  // borrowed
  const int worker_;
  const int num_chunks_;
  const uint64_t resumed_after_;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_PULL_SCHEDULE_H_
