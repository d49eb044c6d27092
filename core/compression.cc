#include "core/compression.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "core/multiversion.h"

namespace monsoon {

namespace {

constexpr float kHalfMax = 65504.0f;

// IEEE half precision, converted with round to nearest even. GCC (and clang >= 15) have the
// arithmetic type _Float16; clang 14, which builds the fuzz test, only the storage type __fp16.
#if defined(__clang__) && __clang_major__ < 15
using Half = __fp16;
#else
using Half = _Float16;
#endif

// Finite values beyond the half range become +-65504; infinities and NaN pass through.
inline float SaturateForHalf(float x) {
  const bool finite_beyond = std::fabs(x) > kHalfMax && std::fabs(x) != HUGE_VALF;
  return finite_beyond ? std::copysign(kHalfMax, x) : x;
}

// On CPUs with F16C these conversions are single instructions.
inline uint16_t ToHalfBits(float x) {
  const Half h = static_cast<Half>(SaturateForHalf(x));
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

inline float FromHalfBits(uint16_t bits) {
  Half h;
  std::memcpy(&h, &bits, sizeof(h));
  return static_cast<float>(h);
}

}  // namespace

uint16_t FloatToHalf(float value) { return ToHalfBits(value); }

float HalfToFloat(uint16_t half) { return FromHalfBits(half); }

MONSOON_MULTIVERSION void FloatsToHalves(absl::Span<const float> in, uint16_t* out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = ToHalfBits(in[i]);
}

MONSOON_MULTIVERSION void HalvesToFloats(const uint16_t* in, absl::Span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = FromHalfBits(in[i]);
}

TopKSparsifier::TopKSparsifier(const ShardingPlan& plan, double fraction)
    : plan_(plan), fraction_(fraction), residual_(plan.num_params(), 0.0f) {}

void TopKSparsifier::Sparsify(absl::Span<float> gradient) {
  for (const Chunk& c : plan_.chunks()) {
    if (c.state) continue;  // state values travel whole
    float* g = gradient.data() + c.offset;
    float* r = residual_.data() + c.offset;
    for (size_t i = 0; i < c.size; ++i) g[i] += r[i];
    const size_t k = std::min<size_t>(
        c.size, static_cast<size_t>(std::ceil(fraction_ * static_cast<double>(c.size))));
    // The k-th largest magnitude: entries above it are kept, and entries equal to it (in
    // index order) until k are kept.
    magnitudes_.resize(c.size);
    for (size_t i = 0; i < c.size; ++i) magnitudes_[i] = std::fabs(g[i]);
    std::nth_element(magnitudes_.begin(), magnitudes_.begin() + (k - 1), magnitudes_.end(),
                     std::greater<float>());
    const float threshold = magnitudes_[k - 1];
    size_t above = 0;
    for (size_t i = 0; i < c.size; ++i) above += std::fabs(g[i]) > threshold;
    size_t ties_left = k - above;
    for (size_t i = 0; i < c.size; ++i) {
      const float m = std::fabs(g[i]);
      const bool keep = m > threshold || (m == threshold && ties_left > 0 && ties_left--);
      r[i] = keep ? 0.0f : g[i];
      g[i] = keep ? g[i] : 0.0f;
    }
  }
}

}  // namespace monsoon
