#include "worker/in_process_ps_client.h"

#include <algorithm>
#include <limits>

#include "core/status_macros.h"

namespace monsoon {

absl::StatusOr<PullResult> InProcessPsClient::PullAll(absl::Span<float> params,
                                                      const PullWait& wait,
                                                      ChunkVersions* versions) {
  PullResult result{std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max()};
  if (versions != nullptr) versions->assign(plan().num_chunks(), 0);
  for (const Chunk& c : plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(
        PullInfo info,
        servers_[c.server]->Pull(
            c.id, params.subspan(c.offset, c.size), wait.ForChunk(c.id), absl::Seconds(30),
            identity_.role == ClientRole::kWorker ? identity_.index : kNotAWorker));
    result.min_version = std::min(result.min_version, info.version);
    result.slowest_clock = std::min(result.slowest_clock, info.slowest_clock);
    if (versions != nullptr) (*versions)[c.id] = info.version;
    bytes_received_ += c.size * sizeof(float);
  }
  return result;
}

absl::StatusOr<PushSummary> InProcessPsClient::PushAll(absl::Span<const float> gradient,
                                                       const ChunkVersions& base_versions,
                                                       double epoch) {
  PushSummary summary;
  for (const Chunk& c : plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(PushResult r,
                             servers_[c.server]->Push(c.id, identity_.index, base_versions[c.id],
                                                      gradient.subspan(c.offset, c.size), epoch));
    summary.mean_staleness += static_cast<double>(r.staleness) / plan().num_chunks();
    summary.chunks_dropped += r.applied ? 0 : 1;
    bytes_sent_ += c.size * sizeof(float);
  }
  return summary;
}

absl::StatusOr<PushSummary> InProcessPsClient::ExchangeAll(absl::Span<const float> weights,
                                                           absl::Span<float> difference,
                                                           ChunkVersions* versions, double epoch) {
  PushSummary summary;
  for (const Chunk& c : plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(
        PushResult r, servers_[c.server]->Exchange(c.id, identity_.index, (*versions)[c.id],
                                                   weights.subspan(c.offset, c.size),
                                                   difference.subspan(c.offset, c.size), epoch));
    (*versions)[c.id] = r.version;
    summary.mean_staleness += static_cast<double>(r.staleness) / plan().num_chunks();
    bytes_sent_ += c.size * sizeof(float);
    bytes_received_ += c.size * sizeof(float);
  }
  return summary;
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
