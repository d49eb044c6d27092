// The update rules' equations, one small function each, on plain spans. ParameterServer
// applies them under each chunk's lock; the unit tests check them on hand-computed cases.
#ifndef MONSOON_SERVER_UPDATE_RULE_H_
#define MONSOON_SERVER_UPDATE_RULE_H_

#include <cstdint>

#include "absl/types/span.h"
#include "core/config/job_config.h"

namespace monsoon {

// The factor an asynchronous push's gradient is applied with, given its staleness (server
// version now - version it was computed on): 1 under `accept`; under `drop`, 1 up to the bound
// and 0 (not applied) above it; under `scale`, 1 / max(1, staleness).
float StalenessWeight(const StalenessConfig& policy, uint64_t staleness);

// The weight a synchronous round gives a gradient of this staleness: 1 when fresh (0); a late
// one (>= 1) is dropped (0) or folded in with 1 / (1 + staleness).
float SyncGradientWeight(const SyncConfig& sync, uint64_t staleness);

// The elastic exchange of EASGD: d = alpha * (worker - centre); centre += d. Writes d, which
// the worker subtracts from its own weights, so worker + centre is conserved.
void ElasticExchange(float alpha, absl::Span<float> centre, absl::Span<const float> worker,
                     absl::Span<float> d);

// DC-ASGD's delay compensation: out = g + lambda * g * g * (now - pulled), elementwise, for a
// gradient g computed on the weights `pulled` when the weights are now `now`.
void CompensateDelay(float lambda, absl::Span<const float> g, absl::Span<const float> now,
                     absl::Span<const float> pulled, absl::Span<float> out);

// sum += weight * g.
void AccumulateScaled(absl::Span<float> sum, absl::Span<const float> g, float weight);

}  // namespace monsoon

#endif  // MONSOON_SERVER_UPDATE_RULE_H_
