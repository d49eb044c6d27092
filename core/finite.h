// Finding NaN and infinity in gradients before they reach any weight.
#ifndef MONSOON_CORE_FINITE_H_
#define MONSOON_CORE_FINITE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace monsoon {

// The index of the first NaN or +-Inf in `values`, or values.size() when every value is
// finite. A finite span costs one branch-free (vectorised) pass at memory speed.
size_t FirstNonFinite(absl::Span<const float> values);
// Copies n floats from `from` to `to` and returns FirstNonFinite of them, in the one pass.
size_t CopyFindingNonFinite(const float* from, float* to, size_t n);
// to[i] += from[i] for i < n, returning FirstNonFinite of the sums, in the one pass.
size_t AddFindingNonFinite(const float* from, float* to, size_t n);

// OK when every value is finite; otherwise InvalidArgument naming `what` and the first NaN or
// infinity ("the gradient is not finite at element 7 (nan); nothing was pushed"), marked so
// that IsNonFiniteRefusal tells it from a server's refusal.
absl::Status CheckFinite(absl::string_view what, absl::Span<const float> values);
// True for CheckFinite's refusal: nothing was sent.
bool IsNonFiniteRefusal(const absl::Status& status);

// A gradient whose every value is finite: what a PsClient pushes, so that a push is refused
// whole before any chunk leaves. Made only by a pass that checked the values: Check's own, or
// the pass that wrote them (CopyFindingNonFinite, AddFindingNonFinite). Borrows the values.
class FiniteGradient {
 public:
  // Scans `values`; CheckFinite's refusal when one is not finite.
  static absl::StatusOr<FiniteGradient> Check(absl::Span<const float> values);
  // `values` as written by a pass that found its first non-finite value at
  // `first_non_finite` (values.size(): none); CheckFinite's refusal otherwise.
  static absl::StatusOr<FiniteGradient> Written(absl::Span<const float> values,
                                                size_t first_non_finite);

  absl::Span<const float> values() const { return values_; }
  size_t size() const { return values_.size(); }

 private:
  explicit FiniteGradient(absl::Span<const float> values) : values_(values) {}
  absl::Span<const float> values_;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_FINITE_H_
