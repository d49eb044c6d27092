// Ends a worker whose compute makes no progress: a forward pass that hangs, a kernel that never
// returns, an own training loop that stops stepping.
#ifndef MONSOON_WORKER_STALL_WATCH_H_
#define MONSOON_WORKER_STALL_WATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace monsoon {

// Watches the steps' compute (each Computing scope: the model's forward and backward, or an
// own loop's time between two steps; waits on servers lie outside). When one has run longer
// than the limit, a thread of its own writes "worker-1 made no progress for 60 s, stuck at
// step 10 in compute" to stderr and ends the process with kExitStalled, which the launcher
// treats as a lost worker. The limit: for the first step, `first_step_seconds` (after
// kFirstStepNotice of it the watch says it is waiting); then `stall_seconds` where positive,
// else ten times the longest step so far, at least kAutoFloor. Before it ends the process it
// raises SIGUSR2 where the process handles it (a Python worker program's faulthandler: every
// thread's stack, to stderr). A negative `stall_seconds` (kStallWatchOff) turns the watch off:
// no thread, no limit. Thread-safe.
class StallWatch {
 public:
  static constexpr absl::Duration kAutoFloor = absl::Seconds(120);
  static constexpr absl::Duration kFirstStepNotice = absl::Seconds(30);

  // `who`: the role's name in the message ("worker-1").
  StallWatch(std::string who, double stall_seconds, double first_step_seconds);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // One step's compute, from construction to destruction.
  class Computing {
   public:
    Computing(StallWatch* watch, int64_t step) : watch_(watch) { watch_->Begin(step); }
    ~Computing() { watch_->End(); }
    Computing(const Computing&) = delete;
    Computing& operator=(const Computing&) = delete;

   private:
    StallWatch* const watch_;
  };

  // How long a compute may run now; InfiniteDuration when the watch is off.
  absl::Duration limit() const;

 private:
  void Begin(int64_t step);
  void End();
  absl::Duration LimitLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Watch();  // the thread: checks every second until the destructor
  // Says, once, that the first step is still running after kFirstStepNotice.
  void NoticeFirstStepLocked(absl::Duration running) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reports the stall, with the stacks where the process can dump them, and ends the process.
  [[noreturn]] void EndStalledLocked(absl::Duration limit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string who_;
  const bool off_;
  const absl::Duration given_;  // ZeroDuration: derived from the steps
  const absl::Duration first_step_;
  mutable absl::Mutex mu_;
  std::optional<absl::Time> since_ ABSL_GUARDED_BY(mu_);  // the compute running, if any
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration longest_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  bool finished_step_ ABSL_GUARDED_BY(mu_) = false;
  bool noticed_ ABSL_GUARDED_BY(mu_) = false;  // the first step's waiting line is written
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_STALL_WATCH_H_
