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

// The state rule for model state (BatchNorm's running statistics, a module's buffers), which
// workers push as their current values: state += share * (pushed - state). An asynchronous
// push moves it by share = its staleness weight / workers, so that the state follows the
// average of the workers' latest values; a synchronous round sets it to the round's mean
// (share 1); the elastic algorithms exchange state as they exchange weights.
void MoveStateTowards(float share, absl::Span<float> state, absl::Span<const float> pushed);

// sum += weight * g.
void AccumulateScaled(absl::Span<float> sum, absl::Span<const float> g, float weight);

}  // namespace monsoon

#endif  // MONSOON_SERVER_UPDATE_RULE_H_
