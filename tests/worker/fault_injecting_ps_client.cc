#include "tests/worker/fault_injecting_ps_client.h"

#include <utility>

#include "core/status_macros.h"

namespace monsoon {

absl::Status FaultInjectingPsClient::Before(Method method) {
  int n;
  {
    absl::MutexLock lock(&mu_);
    n = ++calls_[method];
  }
  return hooks_[method] ? hooks_[method](n) : absl::OkStatus();
}

void FaultInjectingPsClient::AwaitCounterReads(int reads) const {
  absl::MutexLock lock(&mu_);
  std::pair<const int*, int> enough{&counter_reads_, reads};
  mu_.Await(absl::Condition(
      +[](std::pair<const int*, int>* e) { return *e->first >= e->second; }, &enough));
}

TransferCounters FaultInjectingPsClient::counters() const {
  int n;
  {
    absl::MutexLock lock(&mu_);
    n = ++counter_reads_;
  }
  if (counter_hook_) counter_hook_(n).IgnoreError();
  return InProcessPsClient::counters();
}

absl::StatusOr<PullResult> FaultInjectingPsClient::PullAll(absl::Span<float> params,
                                                           const PullWait& wait,
                                                           ChunkVersions* versions) {
  MONSOON_RETURN_IF_ERROR(Before(kPull));
  return InProcessPsClient::PullAll(params, wait, versions);
}

absl::StatusOr<PushSummary> FaultInjectingPsClient::PushAll(FiniteGradient gradient,
                                                            const ChunkVersions& base_versions,
                                                            const PushOrigin& origin) {
  MONSOON_RETURN_IF_ERROR(Before(kPush));
  return InProcessPsClient::PushAll(gradient, base_versions, origin);
}

absl::StatusOr<PushSummary> FaultInjectingPsClient::PushPullAll(FiniteGradient gradient,
                                                                const ChunkVersions& base_versions,
                                                                const PushOrigin& origin,
                                                                PullAfterPush* pull) {
  MONSOON_RETURN_IF_ERROR(Before(kPushPull));
  return InProcessPsClient::PushPullAll(gradient, base_versions, origin, pull);
}

absl::StatusOr<PushSummary> FaultInjectingPsClient::ExchangeAll(absl::Span<const float> weights,
                                                                absl::Span<float> difference,
                                                                ChunkVersions* versions,
                                                                const PushOrigin& origin) {
  MONSOON_RETURN_IF_ERROR(Before(kExchange));
  return InProcessPsClient::ExchangeAll(weights, difference, versions, origin);
}

}  // namespace monsoon
