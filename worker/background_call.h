// One call to the servers at a time, run either on a thread of the object's own while the
// training loop computes on (transport.overlap), or at once on the caller's thread.
#ifndef MONSOON_WORKER_BACKGROUND_CALL_H_
#define MONSOON_WORKER_BACKGROUND_CALL_H_

#include <functional>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "worker/ps_client.h"

namespace monsoon {

// The threads of a worker's trace: the training loop, and the calls a BackgroundCall runs
// while the loop computes on (transport.overlap).
enum WorkerTraceThread { kTraceLoop = 0, kTraceOverlapped = 1 };

// Start/Wait/Arrived are for one thread (the training loop's); the call runs on the object's
// thread. The destructor waits for a call in flight and joins that thread, so whatever the call
// borrows must outlive the object; owners destroy it (or Wait) before the buffers it borrows.
class BackgroundCall {
 public:
  using Call = std::function<absl::StatusOr<PushSummary>()>;

  // asynchronous: Start returns at once and the call runs on this object's thread; otherwise
  // Start runs it before returning.
  explicit BackgroundCall(bool asynchronous);
  ~BackgroundCall();
  BackgroundCall(const BackgroundCall&) = delete;
  BackgroundCall& operator=(const BackgroundCall&) = delete;

  // REQUIRES: no call in flight (Wait first).
  void Start(Call call);
  // True from Start until Wait returns.
  bool in_flight() const { return in_flight_; }
  // True when the call in flight has finished (Wait will not block).
  bool Arrived() const;
  // The call's result. REQUIRES: in_flight().
  absl::StatusOr<PushSummary> Wait();

 private:
  void Serve();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return call_ != nullptr || quit_; }
  bool HasResult() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return result_.has_value(); }

  bool in_flight_ = false;
  mutable absl::Mutex mu_;
  Call call_ ABSL_GUARDED_BY(mu_);  // the call to run next; empty once taken
  std::optional<absl::StatusOr<PushSummary>> result_ ABSL_GUARDED_BY(mu_);
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started last, by the constructor; joined by the destructor
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_BACKGROUND_CALL_H_
