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

// True when no value is NaN or +-Inf (exponent bits all ones), without a branch per value.
MONSOON_MULTIVERSION bool AllFinite(absl::Span<const float> values) {
  uint32_t bad = 0;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace

size_t FirstNonFinite(absl::Span<const float> values) {
  if (AllFinite(values)) return values.size();
  return std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }) -
         values.begin();
}

absl::Status CheckFinite(absl::string_view what, absl::Span<const float> values) {
  const size_t i = FirstNonFinite(values);
  if (i == values.size()) return absl::OkStatus();
  absl::Status refused = absl::InvalidArgumentError(absl::StrCat(
      what, " is not finite at element ", i, " (", values[i], "); nothing was pushed"));
  refused.SetPayload(kNonFinitePayload, absl::Cord());
  return refused;
}

bool IsNonFiniteRefusal(const absl::Status& status) {
  return status.GetPayload(kNonFinitePayload).has_value();
}

}  // namespace monsoon
