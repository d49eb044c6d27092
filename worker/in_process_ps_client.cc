#include "worker/in_process_ps_client.h"

#include <algorithm>
#include <limits>

#include "core/status_macros.h"

namespace monsoon {

absl::StatusOr<uint64_t> InProcessPsClient::PullAll(absl::Span<float> params) {
  uint64_t min_version = std::numeric_limits<uint64_t>::max();
  for (const Chunk& c : servers_.front()->plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(uint64_t v,
                             servers_[c.server]->Pull(c.id, params.subspan(c.offset, c.size)));
    min_version = std::min(min_version, v);
    counters_.bytes_received += c.size * sizeof(float);
  }
  return min_version;
}

absl::Status InProcessPsClient::PushAll(absl::Span<const float> gradient, uint64_t base_version) {
  for (const Chunk& c : servers_.front()->plan().chunks()) {
    MONSOON_RETURN_IF_ERROR(
        servers_[c.server]
            ->Push(c.id, identity_.index, base_version, gradient.subspan(c.offset, c.size))
            .status());
    counters_.bytes_sent += c.size * sizeof(float);
  }
  return absl::OkStatus();
}

absl::Status InProcessPsClient::Finish() {
  for (ParameterServer* s : servers_)
    MONSOON_RETURN_IF_ERROR(s->Finish(identity_.role, identity_.index));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ServerStats>> InProcessPsClient::AllStats() {
  std::vector<ServerStats> stats;
  for (ParameterServer* s : servers_) stats.push_back(s->Stats());
  return stats;
}

}  // namespace monsoon
