// The median the benchmarks report: over repetitions (or rounds) interleaved with their
// reference, so that this VM's drifting speed reaches both alike.
#ifndef MONSOON_BENCH_MEDIAN_H_
#define MONSOON_BENCH_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace monsoon {

// The middle value of `v` (the mean of the two middle ones for an even count); 0 when empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace monsoon

#endif  // MONSOON_BENCH_MEDIAN_H_
