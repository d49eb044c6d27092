// Pulls parked on one chunk until their condition holds, their deadline passes or the server
// closes. The queue only stores and sorts them out: whoever takes waiters out calls their
// callbacks (Release) after letting go of the chunk's lock.
#ifndef MONSOON_SERVER_WAIT_QUEUE_H_
#define MONSOON_SERVER_WAIT_QUEUE_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/ps_types.h"

namespace monsoon {

// A waiter taken out of its queue, with the status its callback gets.
struct Release {
  std::function<void(absl::Status)> done;
  absl::Status status;
};

// Calls every release's callback; call with no lock held.
void RunReleases(std::vector<Release>* releases);

// Guarded by its chunk's lock.
class WaitQueue {
 public:
  void Add(const PullCondition& condition, absl::Time deadline,
           std::function<void(absl::Status)> done);
  bool empty() const { return waiters_.empty(); }

  // Moves into *out the waiters whose condition holds (`holds(condition)`), with OK, and, when
  // `now` is past their deadline, the others with `expired(condition)`. Returns how many.
  template <class Holds, class Expired>
  size_t Collect(absl::Time now, Holds holds, Expired expired, std::vector<Release>* out) {
    size_t taken = 0;
    for (size_t i = 0; i < waiters_.size();) {
      Waiter& w = waiters_[i];
      if (holds(w.condition)) {
        out->push_back({std::move(w.done), absl::OkStatus()});
      } else if (now >= w.deadline) {
        out->push_back({std::move(w.done), expired(w.condition)});
      } else {
        ++i;
        continue;
      }
      waiters_[i] = std::move(waiters_.back());
      waiters_.pop_back();
      ++taken;
    }
    return taken;
  }
  // Moves every waiter into *out with `status`; returns how many.
  size_t TakeAll(const absl::Status& status, std::vector<Release>* out);

 private:
  struct Waiter {
    PullCondition condition;
    absl::Time deadline;
    std::function<void(absl::Status)> done;
  };
  std::vector<Waiter> waiters_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_WAIT_QUEUE_H_
