#include "server/parameter_server.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/config/derived_values.h"
#include "core/finite.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// How often waiting pulls are checked against their deadlines.
constexpr absl::Duration kExpireInterval = absl::Milliseconds(20);
// How often workers are checked against the peer timeout.
constexpr absl::Duration kPeerCheckInterval = absl::Milliseconds(250);

}  // namespace

InitialValuesFn ModelInitialValues(const ModelSpec& spec, uint64_t seed) {
  return [spec, seed](size_t offset, absl::Span<float> out) {
    Model::InitialValues(spec, seed, offset, out);
  };
}

ParameterServer::ParameterServer(int index, const ShardingPlan& plan,
                                 const InitialValuesFn& initial_values, const ServerRules& rules,
                                 int workers_expected, bool evaluator_expected,
                                 const Clock& clock, ServerTicks ticks)
    : index_(index),
      plan_(plan),
      rules_(rules),
      clock_(clock),
      membership_(index, workers_expected, evaluator_expected, rules_, clock_.Now()),
      updater_(ChunkUpdater::Create(rules_, &membership_)) {
  for (const Chunk& c : plan_.ChunksOf(index)) {
    auto state = std::make_unique<ChunkState>();
    state->meta = c;
    absl::MutexLock lock(&state->mu);
    state->values = std::make_shared<std::vector<float>>(c.size);
    initial_values(c.offset, absl::MakeSpan(*state->values));
    state->ledger = ChunkLedger(workers_expected);
    updater_->Init(state.get());
    state_bytes_ += sizeof(float) * (c.size + state->optimizer_state.size() +
                                     state->round.sum.size() + state->pulled.size() * c.size);
    chunks_.emplace(c.id, std::move(state));
  }
  if (ticks == ServerTicks::kOwnThread) expire_thread_ = std::thread([this] { ExpireLoop(); });
}

ParameterServer::~ParameterServer() {
  CancelWaiters();
  if (!expire_thread_.joinable()) return;
  {
    absl::MutexLock lock(&expire_mu_);
    shutting_down_ = true;
  }
  expire_thread_.join();
}

void ParameterServer::CancelWaiters() {
  closed_.store(true);
  std::vector<Release> released;
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    waiting_.fetch_sub(static_cast<int>(chunk->waiters.TakeAll(ClosedError(), &released)));
  }
  RunReleases(&released);
}

absl::Status ParameterServer::ClosedError() const {
  return absl::CancelledError(absl::StrCat("server ", index_, " is shutting down"));
}

absl::StatusOr<ResumePoint> ParameterServer::Hello(uint64_t plan_fingerprint, RoleKind role,
                                                   int index, uint64_t incarnation,
                                                   const std::string& peer) {
  if (plan_fingerprint != plan_.fingerprint()) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", index_, " has a different parameter layout (plan fingerprint ",
                     plan_.fingerprint(), ", client ", plan_fingerprint,
                     "): are all roles running the same job config?"));
  }
  if (role == RoleKind::kEvaluator) {
    membership_.HeardEvaluator(clock_.Now(), peer);
    return ResumePoint{};
  }
  MONSOON_RETURN_IF_ERROR(membership_.CheckWorker("hello", index));
  MONSOON_RETURN_IF_ERROR(membership_.HeardWorker(index, incarnation, clock_.Now(), peer));
  if (membership_.Rejoin(index)) LiveWorkersChanged();
  return ResumePointOf(index);
}

absl::Status ParameterServer::Heartbeat(RoleKind role, int index, uint64_t incarnation) {
  if (role == RoleKind::kEvaluator) {
    membership_.HeardEvaluator(clock_.Now());
    return absl::OkStatus();
  }
  MONSOON_RETURN_IF_ERROR(membership_.CheckWorker("heartbeat", index));
  return membership_.HeardWorker(index, incarnation, clock_.Now());
}

std::vector<std::string> ParameterServer::TakeEvents() { return membership_.TakeEvents(); }

absl::Status ParameterServer::Health() const { return membership_.Health(); }

ResumePoint ParameterServer::ResumePointOf(int index) const {
  ResumePoint point{std::numeric_limits<uint64_t>::max(), {}};  // no chunks: no opinion
  for (const auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    if (chunk->ledger.clock[index] < point.sequence) {
      point = {chunk->ledger.clock[index], chunk->ledger.position[index]};
    }
  }
  return point;
}

absl::StatusOr<ChunkState*> ParameterServer::Find(int chunk_id) const {
  auto it = chunks_.find(chunk_id);
  if (it == chunks_.end()) {
    return absl::NotFoundError(absl::StrCat("server ", index_, " holds no chunk ", chunk_id));
  }
  return it->second.get();
}

absl::StatusOr<size_t> ParameterServer::ChunkSize(int chunk_id) const {
  MONSOON_ASSIGN_OR_RETURN(const ChunkState* chunk, Find(chunk_id));
  return chunk->meta.size;
}

bool ParameterServer::Satisfied(const ChunkState& chunk, const PullCondition& c) const {
  return chunk.version >= c.min_version &&
         (c.min_clock == 0 || membership_.SlowestClock(chunk.ledger.clock) >= c.min_clock);
}

void ParameterServer::WhenReady(int chunk_id, const PullCondition& condition, absl::Time deadline,
                                std::function<void(absl::Status)> done) {
  auto found = Find(chunk_id);
  if (!found.ok()) return done(found.status());
  ChunkState* chunk = *found;
  bool closed;
  {
    absl::MutexLock lock(&chunk->mu);
    // Checked under the chunk's lock, so CancelWaiters cannot miss this waiter.
    closed = closed_.load();
    if (!closed && !Satisfied(*chunk, condition)) {
      chunk->waiters.Add(condition, deadline, std::move(done));
      waiting_.fetch_add(1);
      return;
    }
  }
  done(closed ? ClosedError() : absl::OkStatus());
}

absl::Status ParameterServer::PullAfterPushAllowed() const {
  if (updater_->PullMayFollowPush()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("a push with a pull after it in a ",
                                                    kAlgorithmNames.Name(rules_.algorithm),
                                                    " job: only Downpour's pulls never wait"));
}

absl::StatusOr<ChunkSnapshot> ParameterServer::Snapshot(int chunk_id, int worker) {
  if (worker != kNotAWorker) MONSOON_RETURN_IF_ERROR(CheckWorker("pull", worker));
  MONSOON_ASSIGN_OR_RETURN(ChunkState * chunk, Find(chunk_id));
  ChunkSnapshot snapshot;
  {
    absl::MutexLock lock(&chunk->mu);
    snapshot.values = chunk->values;
    if (!chunk->pulled.empty() && worker != kNotAWorker) {
      chunk->pulled[worker] = chunk->values;
    }
    snapshot.info.version = chunk->version;
    snapshot.info.slowest_clock = SlowestClock(*chunk);
  }
  pulls_served_.fetch_add(1, std::memory_order_relaxed);
  bytes_sent_.fetch_add(chunk->meta.size * sizeof(float), std::memory_order_relaxed);
  return snapshot;
}

uint64_t ParameterServer::SlowestClock(const ChunkState& chunk) const {
  const uint64_t clock = membership_.SlowestClock(chunk.ledger.clock);
  return clock == std::numeric_limits<uint64_t>::max() ? 0 : clock;
}

absl::StatusOr<const ChunkWindow*> ParameterServer::Window() {
  if (!OffersChunkWindow(rules_.staleness)) return nullptr;
  absl::MutexLock lock(&window_mu_);
  if (window_owner_ != nullptr) return window_owner_.get();
  MONSOON_ASSIGN_OR_RETURN(window_owner_, ChunkWindow::Create(plan_, index_));
  // Changes from here on are published by whoever makes them; this fills in the rest.
  window_.store(window_owner_.get(), std::memory_order_release);
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock chunk_lock(&chunk->mu);
    Publish(chunk.get());
  }
  window_bytes_.store(window_owner_->bytes());
  return window_owner_.get();
}

void ParameterServer::Publish(ChunkState* chunk) {
  ChunkWindow* window = window_.load(std::memory_order_acquire);
  if (window == nullptr) return;
  absl::Span<const float> changed;
  if (chunk->published_version != chunk->version) changed = *chunk->values;
  window->Publish(chunk->meta.id, {chunk->version, SlowestClock(*chunk)}, changed);
  chunk->published_version = chunk->version;
}

void ParameterServer::RecordWindowReads(uint64_t reads, uint64_t bytes) {
  pulls_served_.fetch_add(reads, std::memory_order_relaxed);
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
}

absl::StatusOr<PullInfo> ParameterServer::Read(int chunk_id, absl::Span<float> out, int worker) {
  MONSOON_ASSIGN_OR_RETURN(const size_t size, ChunkSize(chunk_id));
  if (out.size() != size) {
    return absl::InvalidArgumentError(
        absl::StrCat("pull of chunk ", chunk_id, " into ", out.size(), " floats; it has ", size));
  }
  MONSOON_ASSIGN_OR_RETURN(ChunkSnapshot snapshot, Snapshot(chunk_id, worker));
  std::copy(snapshot.values->begin(), snapshot.values->end(), out.begin());
  return snapshot.info;
}

absl::StatusOr<PullInfo> ParameterServer::Pull(int chunk_id, absl::Span<float> out,
                                               const PullCondition& condition,
                                               absl::Duration timeout, int worker) {
  absl::Notification ready;
  absl::Status status;
  WhenReady(chunk_id, condition, clock_.Now() + timeout, [&](absl::Status s) {
    status = std::move(s);
    ready.Notify();
  });
  ready.WaitForNotification();
  if (!status.ok()) return status;
  return Read(chunk_id, out, worker);
}

absl::Status ParameterServer::Reject(absl::Status status) {
  pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
  return status;
}

absl::StatusOr<ChunkState*> ParameterServer::Validate(int chunk_id, int worker_index,
                                                      absl::Span<const float> payload,
                                                      bool exchange, const PushOrigin& origin) {
  const char* what = exchange ? "weights" : "gradient";
  if (exchange == PushesGradients(rules_.algorithm)) {
    return Reject(absl::FailedPreconditionError(
        absl::StrCat("this job runs ", kAlgorithmNames.Name(rules_.algorithm), ": workers ",
                     exchange ? "push gradients" : "exchange weights with the centre", ", not ",
                     exchange ? "weights" : "gradients")));
  }
  auto found = Find(chunk_id);
  if (!found.ok()) return Reject(found.status());
  ChunkState* chunk = *found;
  absl::Status known = membership_.CheckWorker("push", worker_index);
  if (known.ok()) known = membership_.HeardWorker(worker_index, origin.incarnation, clock_.Now());
  if (!known.ok()) return Reject(std::move(known));
  if (payload.size() != chunk->meta.size) {
    return Reject(absl::InvalidArgumentError(absl::StrCat(what, " for chunk ", chunk_id, " has ",
                                                          payload.size(), " floats; the chunk has ",
                                                          chunk->meta.size)));
  }
  // Scanned in full before any of it is applied; model state against what its tensors hold.
  if (chunk->meta.state) {
    const size_t first = chunk->meta.offset - (plan_.num_params() - plan_.num_state());
    const absl::Status state = rules_.state.Check(first, payload);
    if (!state.ok()) {
      return Reject(absl::InvalidArgumentError(
          absl::StrCat(state.message(), " (chunk ", chunk_id, " from worker ", worker_index,
                       "): refused whole; the servers' state is unchanged")));
    }
  } else if (const size_t i = FirstNonFinite(payload); i < payload.size()) {
    return Reject(absl::InvalidArgumentError(
        absl::StrCat(what, " for chunk ", chunk_id, " from worker ", worker_index,
                     " is not finite at element ", i, " (", payload[i], ")")));
  }
  return chunk;
}

absl::StatusOr<bool> ParameterServer::Admit(ChunkState* chunk, int worker, uint64_t base_version,
                                            const PushOrigin& origin, PushResult* result) {
  absl::StatusOr<bool> duplicate = chunk->ledger.IsDuplicate(chunk->meta.id, worker, origin);
  if (!duplicate.ok()) return Reject(duplicate.status());
  if (*duplicate) {
    pushes_duplicate_.fetch_add(1, std::memory_order_relaxed);
    result->duplicate = true;
    result->version = chunk->version;
    return true;
  }
  if (base_version > chunk->version) {
    return Reject(absl::InvalidArgumentError(
        absl::StrCat("push for chunk ", chunk->meta.id, " from worker ", worker, " claims version ",
                     base_version, "; the chunk is at ", chunk->version)));
  }
  result->staleness = chunk->version - base_version;
  return false;
}

void ParameterServer::Book(ChunkState* chunk, int worker, const PushOrigin& origin,
                           PushResult* result, std::vector<Release>* released) {
  chunk->ledger.Book(worker, origin, result->applied);
  result->version = chunk->version;
  Publish(chunk);
  if (!chunk->waiters.empty()) CollectWaiters(chunk, absl::InfinitePast(), released);
}

void ParameterServer::RecordValid(const PushResult& result, size_t payload_floats, int worker_index,
                                  double epoch) {
  (result.applied ? pushes_applied_ : pushes_dropped_).fetch_add(1, std::memory_order_relaxed);
  bytes_received_.fetch_add(payload_floats * sizeof(float), std::memory_order_relaxed);
  staleness_[std::min<uint64_t>(result.staleness, kStalenessBuckets - 1)].fetch_add(
      1, std::memory_order_relaxed);
  membership_.RecordEpoch(worker_index, epoch);
}

absl::StatusOr<PushResult> ParameterServer::Push(int chunk_id, int worker_index,
                                                 uint64_t base_version,
                                                 absl::Span<const float> gradient,
                                                 const PushOrigin& origin) {
  MONSOON_ASSIGN_OR_RETURN(ChunkState * chunk,
                           Validate(chunk_id, worker_index, gradient, /*exchange=*/false, origin));
  PushResult result;
  std::vector<Release> released;
  {
    absl::MutexLock lock(&chunk->mu);
    MONSOON_ASSIGN_OR_RETURN(const bool duplicate,
                             Admit(chunk, worker_index, base_version, origin, &result));
    if (duplicate) return result;
    absl::StatusOr<bool> applied =
        updater_->OnPush(chunk, worker_index, result.staleness, gradient, origin);
    if (!applied.ok()) return Reject(applied.status());
    result.applied = *applied;
    Book(chunk, worker_index, origin, &result, &released);
  }
  RecordValid(result, gradient.size(), worker_index, origin.epoch);
  RunReleases(&released);
  return result;
}

absl::StatusOr<PushResult> ParameterServer::Exchange(int chunk_id, int worker_index,
                                                     uint64_t base_version,
                                                     absl::Span<const float> weights,
                                                     absl::Span<float> difference,
                                                     const PushOrigin& origin) {
  MONSOON_ASSIGN_OR_RETURN(ChunkState * chunk,
                           Validate(chunk_id, worker_index, weights, /*exchange=*/true, origin));
  if (difference.size() != weights.size()) {
    return absl::InvalidArgumentError("elastic difference buffer has the wrong size");
  }
  const float alpha = static_cast<float>(ElasticAlpha(rules_.easgd, membership_.LiveWorkers()));
  PushResult result;
  std::vector<Release> released;
  {
    absl::MutexLock lock(&chunk->mu);
    MONSOON_ASSIGN_OR_RETURN(const bool duplicate,
                             Admit(chunk, worker_index, base_version, origin, &result));
    if (duplicate) {
      std::fill(difference.begin(), difference.end(), 0.0f);
      return result;
    }
    MONSOON_RETURN_IF_ERROR(updater_->OnExchange(chunk, alpha, weights, difference));
    result.applied = true;
    Book(chunk, worker_index, origin, &result, &released);
  }
  RecordValid(result, weights.size(), worker_index, origin.epoch);
  bytes_sent_.fetch_add(difference.size() * sizeof(float), std::memory_order_relaxed);
  RunReleases(&released);
  return result;
}

void ParameterServer::CollectWaiters(ChunkState* chunk, absl::Time now,
                                     std::vector<Release>* released) {
  const auto holds = [&](const PullCondition& c) { return Satisfied(*chunk, c); };
  const auto expired = [&](const PullCondition& c) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return absl::DeadlineExceededError(absl::StrCat(
        "server ", index_, " chunk ", chunk->meta.id, ": still at version ", chunk->version,
        " (slowest worker clock ", membership_.SlowestClock(chunk->ledger.clock),
        ") at the deadline; waited for version ", c.min_version, ", clock ", c.min_clock));
  };
  waiting_.fetch_sub(static_cast<int>(chunk->waiters.Collect(now, holds, expired, released)));
}

void ParameterServer::ReleaseWaiters(absl::Time now) {
  std::vector<Release> released;
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    if (!chunk->waiters.empty()) CollectWaiters(chunk.get(), now, &released);
  }
  RunReleases(&released);
}

void ParameterServer::Tick(absl::Time now) {
  if (membership_.CheckPeers(now)) LiveWorkersChanged();
  ReleaseWaiters(now);
}

void ParameterServer::ExpireLoop() {
  absl::MutexLock lock(&expire_mu_);
  absl::Time next_peer_check = clock_.Now();
  while (!expire_mu_.AwaitWithTimeout(absl::Condition(&shutting_down_), kExpireInterval)) {
    const absl::Time now = clock_.Now();
    const bool check_peers = now >= next_peer_check;
    if (waiting_.load() == 0 && !check_peers) continue;
    expire_mu_.Unlock();
    if (check_peers) {
      Tick(now);
      next_peer_check = now + kPeerCheckInterval;
    } else {
      ReleaseWaiters(now);
    }
    expire_mu_.Lock();
  }
}

absl::Status ParameterServer::Finish(RoleKind role, int index) {
  MONSOON_ASSIGN_OR_RETURN(const bool worker_left, membership_.Finish(role, index));
  if (worker_left) LiveWorkersChanged();
  return absl::OkStatus();
}

void ParameterServer::LiveWorkersChanged() {
  // One worker fewer (or more): a synchronous round may now be complete, and an SSP wait over.
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    updater_->OnLiveWorkersChanged(chunk.get());
    Publish(chunk.get());
  }
  ReleaseWaiters(absl::InfinitePast());
}

bool ParameterServer::AllFinished() const { return membership_.AllFinished(); }

bool ParameterServer::WaitAllFinished(absl::Duration timeout) const {
  return membership_.WaitAllFinished(timeout);
}

ServerStats ParameterServer::Stats() const {
  ServerStats s;
  s.server_index = index_;
  s.pushes_applied = pushes_applied_.load();
  s.pushes_dropped = pushes_dropped_.load();
  s.pushes_rejected = pushes_rejected_.load();
  s.pushes_duplicate = pushes_duplicate_.load();
  s.pulls_served = pulls_served_.load();
  s.pulls_waiting = waiting_.load();
  s.bytes_received = bytes_received_.load();
  s.bytes_sent = bytes_sent_.load();
  for (const auto& bucket : staleness_) s.staleness_histogram.push_back(bucket.load());
  membership_.FillStats(&s);
  return s;
}

std::vector<LedgerEntry> ParameterServer::Ledger() const {
  std::vector<LedgerEntry> ledger;
  for (const auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    const ChunkLedger& l = chunk->ledger;
    for (int w = 0; w < membership_.workers(); ++w) {
      ledger.push_back({id, w, l.clock[w], l.applied[w], l.sequence_sum[w], l.duplicates[w]});
    }
  }
  return ledger;
}

CheckpointHeader ParameterServer::Header() const {
  return {rules_.run_id,         index_,
          plan_.fingerprint(),   static_cast<int64_t>(rules_.algorithm),
          membership_.workers(), static_cast<int64_t>(chunks_.size())};
}

void ParameterServer::SaveCheckpoint(CheckpointWriter* out) const {
  out->Pod(Header());
  out->Vector(membership_.incarnations());
  SaveArchive archive(out);
  for (const auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    ChunkRecord record{
        id,           &chunk->version, chunk->values.get(), &chunk->optimizer_state, &chunk->ledger,
        &chunk->round};
    VisitChunk(archive, record, {}).IgnoreError();  // the writer keeps its first error
  }
}

absl::Status ParameterServer::LoadCheckpoint(CheckpointReader* in) {
  CheckpointHeader header;
  MONSOON_RETURN_IF_ERROR(in->Pod(&header));
  MONSOON_RETURN_IF_ERROR(CheckHeader(header, Header(), in->path()));
  std::vector<uint64_t> incarnations;
  MONSOON_RETURN_IF_ERROR(in->Vector(membership_.workers(), &incarnations));
  LoadArchive archive(in);
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    auto values = std::make_shared<std::vector<float>>();
    ChunkRecord record{
        -1, &chunk->version, values.get(), &chunk->optimizer_state, &chunk->ledger, &chunk->round};
    const ChunkSizes sizes{chunk->meta.size, static_cast<size_t>(membership_.workers()),
                           chunk->optimizer_state.size(), chunk->round.sum.size(),
                           chunk->round.from.size()};
    MONSOON_RETURN_IF_ERROR(VisitChunk(archive, record, sizes));
    if (record.id != id) {
      return absl::DataLossError(absl::StrCat("checkpoint ", in->path(), " has chunk ", record.id,
                                              " where chunk ", id, " was expected"));
    }
    chunk->values = std::move(values);
    chunk->published_version = ChunkState::kNotPublished;
    Publish(chunk.get());
    // DC-ASGD: what each worker pulled is not kept; it pulls again after the restart.
    for (auto& pulled : chunk->pulled) pulled = chunk->values;
  }
  MONSOON_RETURN_IF_ERROR(in->Finish());
  // The join timeout counts from here: loading can take a while.
  membership_.Restore(std::move(incarnations), clock_.Now());
  return absl::OkStatus();
}

}  // namespace monsoon
