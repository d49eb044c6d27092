// Helpers shared by Monsoon's tests.
#ifndef MONSOON_TESTS_TEST_UTIL_H_
#define MONSOON_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/finite.h"

namespace monsoon {

// A path inside the test's private temporary directory (Bazel's TEST_TMPDIR).
inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// n floats uniform in [lo, hi), the same for the same seed.
inline std::vector<float> Random(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// `values` checked for a push; aborts the test if one is not finite. Borrows `values`: a
// temporary lives until the end of the statement that pushes it.
inline FiniteGradient Finite(absl::Span<const float> values) {
  absl::StatusOr<FiniteGradient> checked = FiniteGradient::Check(values);
  if (!checked.ok()) std::abort();
  return *checked;
}

}  // namespace monsoon

#endif  // MONSOON_TESTS_TEST_UTIL_H_
