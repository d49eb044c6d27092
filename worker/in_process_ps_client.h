// PsClient calling ParameterServer objects in the same process: the training loops' tests
// run against it without a network, and a simulated cluster's evaluator reads through it.
#ifndef MONSOON_WORKER_IN_PROCESS_PS_CLIENT_H_
#define MONSOON_WORKER_IN_PROCESS_PS_CLIENT_H_

#include <atomic>
#include <vector>

#include "server/parameter_server.h"
#include "worker/ps_client.h"

namespace monsoon {

class InProcessPsClient : public PsClient {
 public:
  // servers[j] is server j (borrowed, must outlive the client); all share one plan.
  InProcessPsClient(std::vector<ParameterServer*> servers, ClientIdentity identity)
      : servers_(std::move(servers)), identity_(identity) {}

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
  absl::StatusOr<ResumePoint> Resume() override;
  absl::Status Finish() override;
  absl::StatusOr<std::vector<ServerStats>> AllStats() override;
  TransferCounters counters() const override { return {bytes_sent_, bytes_received_}; }
  const ShardingPlan& plan() const override { return servers_.front()->plan(); }

 private:
  const std::vector<ParameterServer*> servers_;
  const ClientIdentity identity_;
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_IN_PROCESS_PS_CLIENT_H_
