#include "launcher/simulation/simulated_ps_client.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/finite.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// A request or acknowledgement without a chunk: headers alone.
constexpr double kHeaderBytes = 64;

double ChunkBytes(const Chunk& c) { return kHeaderBytes + c.size * sizeof(float); }

// A simulated worker runs once: one incarnation.
constexpr uint64_t kIncarnation = 1;

PushOrigin Mine(const PushOrigin& origin) {
  PushOrigin mine = origin;
  mine.incarnation = kIncarnation;
  return mine;
}

}  // namespace

SimulatedPsClient::SimulatedPsClient(const SimulatedNetwork* network, int worker,
                                     SimulatedClock* clock)
    : network_(network),
      worker_(worker),
      clock_(clock),
      pulled_(network->servers.front()->plan().num_chunks()) {}

absl::Status SimulatedPsClient::AwaitReplies() {
  while (pending_ > 0) {
    if (!network_->turns->Yield(worker_)) {
      return absl::CancelledError("the simulation ended before this call's replies arrived");
    }
  }
  absl::Status failure = std::move(failure_);
  failure_ = absl::OkStatus();
  return failure;
}

void SimulatedPsClient::Reply(const Chunk& c, double bytes) {
  if (network_->closed) return;
  (*network_->from_servers)[c.server].Send(bytes, [this] {
    if (--pending_ == 0) network_->turns->Resume(worker_);
  });
}

PullResult SimulatedPsClient::TakePulled(absl::Span<float> params, ChunkVersions* versions) {
  PullResult result{std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max()};
  if (versions != nullptr) versions->assign(plan().num_chunks(), 0);
  for (const Chunk& c : plan().chunks()) {
    ChunkSnapshot& s = pulled_[c.id];
    std::copy(s.values->begin(), s.values->end(), params.begin() + c.offset);
    result.min_version = std::min(result.min_version, s.info.version);
    result.slowest_clock = std::min(result.slowest_clock, s.info.slowest_clock);
    if (versions != nullptr) (*versions)[c.id] = s.info.version;
    bytes_received_ += c.size * sizeof(float);
    s.values.reset();
  }
  return result;
}

void SimulatedPsClient::Keep(const Chunk& c, absl::StatusOr<ChunkSnapshot> snapshot) {
  if (snapshot.ok()) {
    pulled_[c.id] = *std::move(snapshot);
  } else if (failure_.ok()) {
    failure_ = snapshot.status();
  }
}

void SimulatedPsClient::Fail(const absl::Status& status) {
  if (failure_.ok()) failure_ = status;
}

void SimulatedPsClient::RequestChunk(const Chunk& c, const PullCondition& condition) {
  (*network_->to_servers)[c.server].Send(kHeaderBytes, [this, c, condition] {
    ParameterServer* server = network_->servers[c.server];
    server->WhenReady(
        c.id, condition, absl::InfiniteFuture(), [this, c, server](absl::Status ready) {
          Keep(c,
               ready.ok() ? server->Snapshot(c.id, worker_) : absl::StatusOr<ChunkSnapshot>(ready));
          Reply(c, ChunkBytes(c));
        });
  });
}

absl::StatusOr<PullResult> SimulatedPsClient::PullAll(absl::Span<float> params,
                                                      const PullWait& wait,
                                                      ChunkVersions* versions) {
  pending_ = plan().num_chunks();
  network_->loop->After(clock_->TakeCompute(), [this, &wait] {
    for (const Chunk& c : plan().chunks()) RequestChunk(c, wait.ForChunk(c.id));
  });
  MONSOON_RETURN_IF_ERROR(AwaitReplies());
  return TakePulled(params, versions);
}

void SimulatedPsClient::ApplyChunk(const Chunk& c, bool reply_chunk, const Apply& apply,
                                   PushSummary* summary) {
  absl::StatusOr<PushResult> r = apply(c);
  if (r.ok()) {
    summary->mean_staleness += static_cast<double>(r->staleness) / plan().num_chunks();
    summary->chunks_dropped += r->applied || r->duplicate ? 0 : 1;
    summary->chunks_duplicate += r->duplicate ? 1 : 0;
    if (reply_chunk) Keep(c, network_->servers[c.server]->Snapshot(c.id, worker_));
  } else {
    Fail(r.status());
  }
  Reply(c, reply_chunk ? ChunkBytes(c) : kHeaderBytes);
}

absl::StatusOr<PushSummary> SimulatedPsClient::Update(bool reply_chunks, const Apply& apply) {
  PushSummary summary;
  pending_ = plan().num_chunks();
  network_->loop->After(clock_->TakeCompute(), [&] {
    for (const Chunk& c : plan().chunks()) {
      (*network_->to_servers)[c.server].Send(ChunkBytes(c), [&, c] {
        (*network_->processors)[c.server].Handle(
            ChunkBytes(c), [&, c] { ApplyChunk(c, reply_chunks, apply, &summary); });
      });
    }
  });
  MONSOON_RETURN_IF_ERROR(AwaitReplies());
  return summary;
}

absl::StatusOr<PushSummary> SimulatedPsClient::PushAll(FiniteGradient gradient,
                                                       const ChunkVersions& base_versions,
                                                       const PushOrigin& origin) {
  return Push(gradient.values(), base_versions, origin, /*pull_after=*/false);
}

absl::StatusOr<PushSummary> SimulatedPsClient::PushPullAll(FiniteGradient gradient,
                                                           const ChunkVersions& base_versions,
                                                           const PushOrigin& origin,
                                                           PullAfterPush* pull) {
  MONSOON_RETURN_IF_ERROR(network_->servers.front()->PullAfterPushAllowed());
  MONSOON_ASSIGN_OR_RETURN(PushSummary summary,
                           Push(gradient.values(), base_versions, origin, /*pull_after=*/true));
  pull->result = TakePulled(pull->params, pull->versions);
  return summary;
}

absl::StatusOr<PushSummary> SimulatedPsClient::Push(absl::Span<const float> gradient,
                                                    const ChunkVersions& base_versions,
                                                    const PushOrigin& origin, bool pull_after) {
  bytes_sent_ += gradient.size() * sizeof(float);
  const PushOrigin mine = Mine(origin);
  return Update(pull_after, [&](const Chunk& c) {
    return network_->servers[c.server]->Push(c.id, worker_, base_versions[c.id],
                                             gradient.subspan(c.offset, c.size), mine);
  });
}

absl::StatusOr<PushSummary> SimulatedPsClient::ExchangeAll(absl::Span<const float> weights,
                                                           absl::Span<float> difference,
                                                           ChunkVersions* versions,
                                                           const PushOrigin& origin) {
  MONSOON_RETURN_IF_ERROR(CheckFinite("the weights", weights));
  bytes_sent_ += weights.size() * sizeof(float);
  bytes_received_ += difference.size() * sizeof(float);
  const PushOrigin mine = Mine(origin);
  return Update(/*reply_chunks=*/false, [&](const Chunk& c) {
    absl::StatusOr<PushResult> r = network_->servers[c.server]->Exchange(
        c.id, worker_, (*versions)[c.id], weights.subspan(c.offset, c.size),
        difference.subspan(c.offset, c.size), mine);
    if (r.ok()) (*versions)[c.id] = r->version;
    return r;
  });
}

absl::StatusOr<ResumePoint> SimulatedPsClient::Resume() {
  for (ParameterServer* s : network_->servers) {
    MONSOON_RETURN_IF_ERROR(
        s->Hello(s->plan().fingerprint(), RoleKind::kWorker, worker_, kIncarnation).status());
  }
  return ResumePoint{};
}

absl::Status SimulatedPsClient::Finish() {
  for (ParameterServer* s : network_->servers) {
    MONSOON_RETURN_IF_ERROR(s->Finish(RoleKind::kWorker, worker_));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ServerStats>> SimulatedPsClient::AllStats() {
  std::vector<ServerStats> stats;
  for (ParameterServer* s : network_->servers) stats.push_back(s->Stats());
  return stats;
}

}  // namespace monsoon
