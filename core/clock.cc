#include "core/clock.h"

#include "absl/time/clock.h"

namespace monsoon {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration d) const override { absl::SleepFor(d); }
};

}  // namespace

const Clock& Clock::System() {
  static const SystemClock* clock = new SystemClock();
  return *clock;
}

}  // namespace monsoon
