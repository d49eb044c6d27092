// A clock for tests that moves only when told: Advance, or a SleepFor by the code under test,
// which returns at once. Thread-safe.
#ifndef MONSOON_TESTS_MANUAL_CLOCK_H_
#define MONSOON_TESTS_MANUAL_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/clock.h"

namespace monsoon {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::UnixEpoch() + absl::Hours(1)) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) const override { Advance(d); }
  void Advance(absl::Duration d) const {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  mutable absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace monsoon

#endif  // MONSOON_TESTS_MANUAL_CLOCK_H_
