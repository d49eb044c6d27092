#include "worker/pull_schedule.h"

namespace monsoon {

PullSchedule::PullSchedule(const WorkerRules& rules, int worker, int num_chunks,
                           uint64_t resumed_after)
    : rules_(rules), worker_(worker), num_chunks_(num_chunks), resumed_after_(resumed_after) {}

bool PullSchedule::PullsBefore(int64_t step) const {
  if (rules_.algorithm != Algorithm::kDownpour) return true;
  return step % rules_.n_fetch == 0;
}

bool PullSchedule::PullsWithin(int64_t first, int count) const {
  for (int64_t step = first; step < first + count; ++step) {
    if (PullsBefore(step)) return true;
  }
  return false;
}

PullWait PullSchedule::WaitFor(int64_t step, const ChunkVersions& pushed_on) const {
  PullWait wait;
  switch (rules_.algorithm) {
    case Algorithm::kDownpour: {
      // Warm start: the others wait until worker 0's first warm_start_steps are applied.
      const int warm = rules_.warm_start_steps;
      if (step == 0 && worker_ > 0 && warm > 0) {
        const uint64_t pushes = (warm + rules_.n_push - 1) / rules_.n_push;
        wait.min_versions.assign(num_chunks_, pushes);
      }
      break;
    }
    case Algorithm::kSync:
      // Each chunk's round this worker last pushed into must be applied first. Right after a
      // resume (no push yet), wait until every live worker has made as many pushes: the round
      // holding this worker's last push is then closed.
      if (!pushed_on.empty()) {
        wait.min_versions = pushed_on;
        for (uint64_t& v : wait.min_versions) ++v;
      } else if (step > 0) {
        wait.min_clock = resumed_after_;
      }
      break;
    case Algorithm::kSsp: {
      // This worker has pushed `step` times; the slowest may be at most `bound` behind.
      const int64_t bound = rules_.ssp_bound;
      if (step > bound) wait.min_clock = static_cast<uint64_t>(step - bound);
      break;
    }
    case Algorithm::kEasgd:
    case Algorithm::kEamsgd:
      break;
  }
  return wait;
}

}  // namespace monsoon
