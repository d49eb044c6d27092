#include "core/finite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/multiversion.h"

namespace monsoon {
namespace {

constexpr absl::string_view kNonFinitePayload = "monsoon/non-finite";

// 1 when `v` is NaN or +-Inf (exponent bits all ones), without a branch.
inline uint32_t NonFiniteBit(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
}

MONSOON_MULTIVERSION bool AllFinite(const float* values, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad |= NonFiniteBit(values[i]);
  return bad == 0;
}

MONSOON_MULTIVERSION bool CopyAllFinite(const float* __restrict from, float* __restrict to,
                                        size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    to[i] = from[i];
    bad |= NonFiniteBit(from[i]);
  }
  return bad == 0;
}

MONSOON_MULTIVERSION bool AddAllFinite(const float* __restrict from, float* __restrict to,
                                       size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    to[i] += from[i];
    bad |= NonFiniteBit(to[i]);
  }
  return bad == 0;
}

// values.size() when `all_finite`, else the first non-finite index (a second pass, taken only
// on the way to a refusal).
size_t FirstNonFiniteIf(bool all_finite, absl::Span<const float> values) {
  if (all_finite) return values.size();
  return std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }) -
         values.begin();
}

absl::Status NonFiniteRefusal(absl::string_view what, absl::Span<const float> values, size_t i) {
  absl::Status refused = absl::InvalidArgumentError(absl::StrCat(
      what, " is not finite at element ", i, " (", values[i], "); nothing was pushed"));
  refused.SetPayload(kNonFinitePayload, absl::Cord());
  return refused;
}

}  // namespace

size_t FirstNonFinite(absl::Span<const float> values) {
  return FirstNonFiniteIf(AllFinite(values.data(), values.size()), values);
}

size_t CopyFindingNonFinite(const float* from, float* to, size_t n) {
  if (from == to) return FirstNonFinite({to, n});
  return FirstNonFiniteIf(CopyAllFinite(from, to, n), {to, n});
}

size_t AddFindingNonFinite(const float* from, float* to, size_t n) {
  return FirstNonFiniteIf(AddAllFinite(from, to, n), {to, n});
}

absl::Status CheckFinite(absl::string_view what, absl::Span<const float> values) {
  const size_t i = FirstNonFinite(values);
  if (i == values.size()) return absl::OkStatus();
  return NonFiniteRefusal(what, values, i);
}

bool IsNonFiniteRefusal(const absl::Status& status) {
  return status.GetPayload(kNonFinitePayload).has_value();
}

absl::StatusOr<FiniteGradient> FiniteGradient::Check(absl::Span<const float> values) {
  return Written(values, FirstNonFinite(values));
}

absl::StatusOr<FiniteGradient> FiniteGradient::Written(absl::Span<const float> values,
                                                       size_t first_non_finite) {
  if (first_non_finite < values.size()) {
    return NonFiniteRefusal("the gradient", values, first_non_finite);
  }
  return FiniteGradient(values);
}

}  // namespace monsoon
