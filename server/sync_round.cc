#include "server/sync_round.h"

#include <algorithm>

#include "server/update_rule.h"

namespace monsoon {

void SyncRound::Allocate(size_t size, int workers) {
  sum.assign(size, 0.0f);
  from.assign(workers, false);
}

void SyncRound::Add(absl::Span<const float> g, float w, double at_epoch) {
  AccumulateScaled(absl::MakeSpan(sum), g, w);
  weight += w;
  epoch = std::max(epoch, at_epoch);
}

void SyncRound::ToMean() {
  float* s = sum.data();
  const float inv = 1.0f / weight;
  for (size_t i = 0, n = sum.size(); i < n; ++i) s[i] *= inv;
}

void SyncRound::Clear() {
  std::fill(sum.begin(), sum.end(), 0.0f);
  std::fill(from.begin(), from.end(), false);
  weight = 0;
  epoch = 0;
  fresh = 0;
}

}  // namespace monsoon
