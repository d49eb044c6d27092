#include "server/wait_queue.h"

namespace monsoon {

void RunReleases(std::vector<Release>* releases) {
  for (Release& r : *releases) r.done(std::move(r.status));
  releases->clear();
}

void WaitQueue::Add(const PullCondition& condition, absl::Time deadline,
                    std::function<void(absl::Status)> done) {
  waiters_.push_back({condition, deadline, std::move(done)});
}

size_t WaitQueue::TakeAll(const absl::Status& status, std::vector<Release>* out) {
  for (Waiter& w : waiters_) out->push_back({std::move(w.done), status});
  const size_t taken = waiters_.size();
  waiters_.clear();
  return taken;
}

}  // namespace monsoon
