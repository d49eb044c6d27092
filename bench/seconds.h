// Wall-clock seconds of one call, as the benchmarks time their passes.
#ifndef MONSOON_BENCH_SECONDS_H_
#define MONSOON_BENCH_SECONDS_H_

#include "absl/time/clock.h"

namespace monsoon {

// Seconds `f()` takes.
template <typename F>
double SecondsOf(F&& f) {
  const absl::Time start = absl::Now();
  f();
  return absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace monsoon

#endif  // MONSOON_BENCH_SECONDS_H_
