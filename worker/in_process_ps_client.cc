#include "worker/in_process_ps_client.h"

#include <algorithm>
#include <limits>

#include "core/finite.h"
#include "core/status_macros.h"

namespace monsoon {

absl::StatusOr<PullResult> InProcessPsClient::PullAll(absl::Span<float> params,
                                                      const PullWait& wait,
                                                      ChunkVersions* versions) {
  PullResult result = PullResult::BeforeChunks();
  if (versions != nullptr) versions->assign(plan().num_chunks(), 0);
  for (const Chunk& c : plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(
        PullInfo info,
        servers_[c.server]->Pull(
            c.id, params.subspan(c.offset, c.size), wait.ForChunk(c.id), absl::Seconds(30),
            identity_.role == RoleKind::kWorker ? identity_.index : kNotAWorker));
    result.TakeChunk(info.version, info.slowest_clock);
    if (versions != nullptr) (*versions)[c.id] = info.version;
    bytes_received_ += c.size * sizeof(float);
  }
  return result;
}

absl::StatusOr<ResumePoint> InProcessPsClient::Resume() {
  ResumePoint resume{std::numeric_limits<uint64_t>::max(), {}};
  for (ParameterServer* s : servers_) {
    MONSOON_ASSIGN_OR_RETURN(ResumePoint r, s->Hello(s->plan().fingerprint(), identity_.role,
                                                     identity_.index, identity_.incarnation));
    if (r.sequence < resume.sequence) resume = r;
  }
  return resume;
}

absl::StatusOr<PushSummary> InProcessPsClient::PushAll(FiniteGradient gradient,
                                                       const ChunkVersions& base_versions,
                                                       const PushOrigin& origin) {
  PushOrigin mine = origin;
  mine.incarnation = identity_.incarnation;
  PushSummary summary;
  for (const Chunk& c : plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(
        PushResult r, servers_[c.server]->Push(c.id, identity_.index, base_versions[c.id],
                                               gradient.values().subspan(c.offset, c.size), mine));
    summary.AddChunk(r.staleness, r.applied, r.duplicate, plan().num_chunks());
    bytes_sent_ += c.size * sizeof(float);
  }
  return summary;
}

absl::StatusOr<PushSummary> InProcessPsClient::PushPullAll(FiniteGradient gradient,
                                                           const ChunkVersions& base_versions,
                                                           const PushOrigin& origin,
                                                           PullAfterPush* pull) {
  MONSOON_RETURN_IF_ERROR(servers_.front()->PullAfterPushAllowed());
  MONSOON_ASSIGN_OR_RETURN(PushSummary summary, PushAll(gradient, base_versions, origin));
  MONSOON_ASSIGN_OR_RETURN(pull->result, PullAll(pull->params, {}, pull->versions));
  return summary;
}

absl::StatusOr<PushSummary> InProcessPsClient::ExchangeAll(absl::Span<const float> weights,
                                                           absl::Span<float> difference,
                                                           ChunkVersions* versions,
                                                           const PushOrigin& origin) {
  MONSOON_RETURN_IF_ERROR(CheckFinite("the weights", weights));
  PushOrigin mine = origin;
  mine.incarnation = identity_.incarnation;
  PushSummary summary;
  for (const Chunk& c : plan().chunks()) {
    MONSOON_ASSIGN_OR_RETURN(
        PushResult r, servers_[c.server]->Exchange(c.id, identity_.index, (*versions)[c.id],
                                                   weights.subspan(c.offset, c.size),
                                                   difference.subspan(c.offset, c.size), mine));
    summary.AddChunk(r.staleness, true, r.duplicate, plan().num_chunks());
    (*versions)[c.id] = r.version;
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
