// Gradient compression for pushes (transport.compression):
// - fp16: every gradient value travels as an IEEE half (2 bytes instead of 4), rounded to
//   nearest even and saturated at +-65504.
// - topk: each worker sends, per chunk, only the largest-magnitude fraction of its gradient
//   (as index/value pairs) and keeps the rest as a residual that is added to its next
//   gradient (error feedback; Stich et al. 2018), so no gradient mass is lost, only delayed.
#ifndef MONSOON_CORE_COMPRESSION_H_
#define MONSOON_CORE_COMPRESSION_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/enum_names.h"
#include "core/sharding_plan.h"

namespace monsoon {

// How pushed gradients travel: float32, half floats, or each chunk's top-k entries.
enum class Compression { kNone, kFp16, kTopk };
inline constexpr NamedValue<Compression> kCompressionValues[] = {
    {Compression::kNone, "none"}, {Compression::kFp16, "fp16"}, {Compression::kTopk, "topk"}};
inline constexpr EnumNames<Compression> kCompressionNames{"compression", kCompressionValues};

// IEEE 754 binary16 conversions. FloatToHalf rounds to nearest even, saturates finite values
// beyond the half range to +-65504 and keeps NaN and infinity as they are (so the server still
// rejects them).
uint16_t FloatToHalf(float value);
float HalfToFloat(uint16_t half);
void FloatsToHalves(absl::Span<const float> in, uint16_t* out);
void HalvesToFloats(const uint16_t* in, absl::Span<float> out);

// Top-k sparsification with error feedback over a flat gradient cut into the plan's chunks.
class TopKSparsifier {
 public:
  // Keeps ceil(fraction * chunk size) entries of each chunk (fraction in (0, 1]).
  TopKSparsifier(const ShardingPlan& plan, double fraction);

  // gradient += residual; then in each chunk every entry but the k largest in magnitude
  // moves to the residual and is zeroed in `gradient`. State chunks are left whole.
  void Sparsify(absl::Span<float> gradient);

  const std::vector<float>& residual() const { return residual_; }

 private:
  const ShardingPlan plan_;
  const double fraction_;
  std::vector<float> residual_;
  std::vector<float> magnitudes_;  // scratch: a chunk's |values|
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPRESSION_H_
