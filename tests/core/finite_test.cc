#include "core/finite.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace monsoon {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// 1003 values: whole vector blocks and a tail, with -0, a denormal and the largest float.
std::vector<float> Values() {
  std::vector<float> v(1003);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 100.0f;
  v[3] = -0.0f;
  v[4] = std::numeric_limits<float>::denorm_min();
  v[5] = std::numeric_limits<float>::max();
  return v;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("finite: every pass finds the first NaN or infinity, wherever it is", "[core]") {
  const std::vector<float> clean = Values();
  CHECK(FirstNonFinite(clean) == clean.size());
  std::vector<float> copy(clean.size());
  CHECK(CopyFindingNonFinite(clean.data(), copy.data(), clean.size()) == clean.size());
  CHECK(SameBits(copy, clean));
  for (const size_t at : {0, 7, 8, 15, 16, 500, 1000, 1002}) {
    for (const float bad : {kNan, kInf, -kInf}) {
      std::vector<float> v = clean;
      v[at] = bad;
      v[1002] = at == 1002 ? bad : kNan;  // a later one never hides the first
      CAPTURE(at, bad);
      CHECK(FirstNonFinite(v) == at);
      std::vector<float> out(v.size());
      CHECK(CopyFindingNonFinite(v.data(), out.data(), v.size()) == at);
      CHECK(SameBits(out, v));  // copied whole, NaN bits and all
      std::vector<float> sum(v.size(), 0.0f);
      CHECK(AddFindingNonFinite(v.data(), sum.data(), v.size()) == at);
    }
  }
}

TEST_CASE("finite: a sum of finite values that overflows is found", "[core]") {
  std::vector<float> to(40, 1.0f), from(40, 1.0f);
  to[33] = from[33] = std::numeric_limits<float>::max();
  CHECK(AddFindingNonFinite(from.data(), to.data(), to.size()) == 33);
  CHECK(std::isinf(to[33]));
  CHECK(to[0] == 2.0f);
}

TEST_CASE("finite: a FiniteGradient is made only from values found finite", "[core]") {
  std::vector<float> v = Values();
  auto checked = FiniteGradient::Check(v);
  REQUIRE(checked.ok());
  CHECK(checked->values().data() == v.data());  // borrowed, not copied
  CHECK(checked->size() == v.size());
  CHECK(FiniteGradient::Written(v, v.size()).ok());

  v[700] = kNan;
  const absl::Status scanned = FiniteGradient::Check(v).status();
  CHECK(std::string(scanned.message()) ==
        "the gradient is not finite at element 700 (nan); nothing was pushed");
  CHECK(IsNonFiniteRefusal(scanned));
  // Written trusts the index its writer found and names that element.
  v[12] = -kInf;
  const absl::Status written = FiniteGradient::Written(v, 12).status();
  CHECK(std::string(written.message()) ==
        "the gradient is not finite at element 12 (-inf); nothing was pushed");
  CHECK(IsNonFiniteRefusal(written));
  CHECK_FALSE(IsNonFiniteRefusal(absl::InvalidArgumentError("a server's refusal")));
}

}  // namespace
}  // namespace monsoon
