// Where a role reads the time: the system's clock, or a simulated cluster's virtual one
// (launcher/simulation/), so that the same worker and evaluator code times both.
#ifndef MONSOON_CORE_CLOCK_H_
#define MONSOON_CORE_CLOCK_H_

#include "absl/time/time.h"

namespace monsoon {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Lets `d` pass: sleeps on the system's clock; a simulated worker's clock counts it as
  // compute time instead.
  virtual void SleepFor(absl::Duration d) const = 0;
  // The system's clock (absl::Now).
  static const Clock& System();
};

}  // namespace monsoon

#endif  // MONSOON_CORE_CLOCK_H_
