#include "core/finite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/multiversion.h"

namespace monsoon {
namespace {

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

}  // namespace monsoon
