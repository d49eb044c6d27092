#include "server/update_rule.h"

#include <algorithm>

#include "core/multiversion.h"

namespace monsoon {

float StalenessWeight(const StalenessConfig& policy, uint64_t staleness) {
  if (policy.policy == StalenessPolicy::kDrop) {
    return staleness > static_cast<uint64_t>(policy.bound) ? 0.0f : 1.0f;
  }
  if (policy.policy == StalenessPolicy::kScale) {
    return 1.0f / static_cast<float>(std::max<uint64_t>(1, staleness));
  }
  return 1.0f;
}

float SyncGradientWeight(const SyncConfig& sync, uint64_t staleness) {
  if (staleness == 0) return 1.0f;
  if (sync.late_gradients == LateGradients::kFold) return 1.0f / static_cast<float>(1 + staleness);
  return 0.0f;
}

MONSOON_MULTIVERSION void ElasticExchange(float alpha, absl::Span<float> centre,
                                          absl::Span<const float> worker, absl::Span<float> d) {
  float* __restrict cp = centre.data();
  float* __restrict dp = d.data();
  const float* __restrict xp = worker.data();
  for (size_t i = 0, n = centre.size(); i < n; ++i) {
    dp[i] = alpha * (xp[i] - cp[i]);
    cp[i] += dp[i];
  }
}

MONSOON_MULTIVERSION void CompensateDelay(float lambda, absl::Span<const float> g,
                                          absl::Span<const float> now,
                                          absl::Span<const float> pulled, absl::Span<float> out) {
  const float* __restrict gp = g.data();
  const float* __restrict np = now.data();
  const float* __restrict pp = pulled.data();
  float* __restrict op = out.data();
  for (size_t i = 0, n = g.size(); i < n; ++i) {
    op[i] = gp[i] + lambda * gp[i] * gp[i] * (np[i] - pp[i]);
  }
}

MONSOON_MULTIVERSION void MoveStateTowards(float share, absl::Span<float> state,
                                           absl::Span<const float> pushed) {
  float* __restrict sp = state.data();
  const float* __restrict pp = pushed.data();
  for (size_t i = 0, n = state.size(); i < n; ++i) sp[i] += share * (pp[i] - sp[i]);
}

MONSOON_MULTIVERSION void AccumulateScaled(absl::Span<float> sum, absl::Span<const float> g,
                                           float weight) {
  float* __restrict sp = sum.data();
  const float* __restrict gp = g.data();
  for (size_t i = 0, n = sum.size(); i < n; ++i) sp[i] += weight * gp[i];
}

}  // namespace monsoon
