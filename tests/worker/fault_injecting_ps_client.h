// A PsClient over in-process servers whose calls a test can delay or fail: a hook runs before
// every call of a kind, on the calling thread, and a non-OK status it returns fails that call
// without reaching the servers. Hooks block on the test's own conditions (never on a clock),
// e.g. AwaitCounterReads: the training loop reads counters() once per metrics row.
#ifndef MONSOON_TESTS_WORKER_FAULT_INJECTING_PS_CLIENT_H_
#define MONSOON_TESTS_WORKER_FAULT_INJECTING_PS_CLIENT_H_

#include <array>
#include <functional>

#include "absl/synchronization/mutex.h"
#include "worker/in_process_ps_client.h"

namespace monsoon {

class FaultInjectingPsClient : public InProcessPsClient {
 public:
  enum Method { kPull, kPush, kPushPull, kExchange, kMethods };
  // Called with n = 1, 2, ... for the n-th call of its method.
  using Hook = std::function<absl::Status(int n)>;

  using InProcessPsClient::InProcessPsClient;

  // Set before the calls start.
  void OnCall(Method method, Hook hook) { hooks_[method] = std::move(hook); }
  // Runs on the reading thread at the n-th read of counters(), before it returns.
  void OnCounterRead(Hook hook) { counter_hook_ = std::move(hook); }
  // Blocks until counters() has been read at least `reads` times.
  void AwaitCounterReads(int reads) const;

  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override;
  absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient, const ChunkVersions& base_versions,
                                      const PushOrigin& origin) override;
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                          const ChunkVersions& base_versions,
                                          const PushOrigin& origin, PullAfterPush* pull) override;
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                          absl::Span<float> difference, ChunkVersions* versions,
                                          const PushOrigin& origin) override;
  TransferCounters counters() const override;

 private:
  // Counts the call and runs its hook.
  absl::Status Before(Method method);

  std::array<Hook, kMethods> hooks_;
  Hook counter_hook_;
  mutable absl::Mutex mu_;
  std::array<int, kMethods> calls_ ABSL_GUARDED_BY(mu_) = {};
  mutable int counter_reads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace monsoon

#endif  // MONSOON_TESTS_WORKER_FAULT_INJECTING_PS_CLIENT_H_
