// One synchronous (BSP) round of one chunk: the weighted sum of the gradients gathered so far,
// which workers sent fresh ones, and the furthest epoch they were computed at.
#ifndef MONSOON_SERVER_SYNC_ROUND_H_
#define MONSOON_SERVER_SYNC_ROUND_H_

#include <vector>

#include "absl/types/span.h"

namespace monsoon {

// Plain data with its rules; guarded by its chunk's lock. Empty (size 0) outside sync jobs.
struct SyncRound {
  // Sized for a chunk of `size` floats and `workers` workers, empty.
  void Allocate(size_t size, int workers);
  // Adds gradient g with `weight` (> 0) computed at `epoch`.
  void Add(absl::Span<const float> g, float weight, double epoch);
  // Hands apply(mean, epoch) the weighted mean of the round's gradients and the furthest epoch
  // they were computed at, then empties the round.
  template <class Apply>
  void Close(Apply apply) {
    ToMean();
    apply(absl::Span<const float>(sum), epoch);
    Clear();
  }

  std::vector<float> sum;
  float weight = 0;
  double epoch = 0;
  int fresh = 0;           // fresh gradients (computed on the current version): the quorum's
  std::vector<bool> from;  // which workers sent a fresh gradient

 private:
  void ToMean();
  void Clear();
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_SYNC_ROUND_H_
