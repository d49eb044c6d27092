#include "server/parameter_server.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/multiversion.h"
#include "core/status_macros.h"
#include "server/update_rule.h"

namespace monsoon {
namespace {

// True when no value is NaN or +-Inf (exponent bits all ones). Branch-free so that it
// vectorises: a push is scanned in full before any of it is applied.
MONSOON_MULTIVERSION bool AllFinite(absl::Span<const float> values) {
  uint32_t bad = 0;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

// How often waiting pulls are checked against their deadlines.
constexpr absl::Duration kExpireInterval = absl::Milliseconds(20);
// How often workers are checked against the peer timeout.
constexpr absl::Duration kPeerCheckInterval = absl::Milliseconds(250);

}  // namespace

ServerRules ServerRules::FromConfig(const JobConfig& config) {
  ServerRules rules;
  rules.algorithm = config.training.algorithm;
  rules.optimizer = config.optimizer;
  rules.staleness = config.staleness;
  rules.sync = config.sync;
  rules.easgd = config.easgd;
  rules.schedule = config.training.learning_rate_schedule;
  rules.epochs = config.training.epochs;
  rules.peer_timeout = absl::Seconds(config.reliability.peer_timeout_seconds);
  rules.join_timeout = absl::Seconds(config.reliability.join_timeout_seconds);
  rules.stop_on_worker_loss = StopsOnWorkerLoss(config);
  return rules;
}

ParameterServer::ParameterServer(int index, const ShardingPlan& plan, const ModelSpec& spec,
                                 uint64_t seed, const ServerRules& rules, int workers_expected,
                                 bool evaluator_expected)
    : index_(index),
      plan_(plan),
      rules_(rules),
      optimizer_(Optimizer::Create(rules.optimizer)),
      workers_expected_(workers_expected),
      evaluator_expected_(evaluator_expected),
      worker_finished_(workers_expected, false),
      worker_epoch_(workers_expected, 0.0),
      incarnation_(workers_expected, 0) {
  for (int w = 0; w < workers_expected; ++w) {
    worker_liveness_.emplace_back(absl::StrCat("worker ", w));
  }
  const bool sync = rules_.algorithm == Algorithm::kSync;
  const bool optimizes = PushesGradients(rules_.algorithm);
  for (const Chunk& c : plan_.ChunksOf(index)) {
    auto state = std::make_unique<ChunkState>();
    state->meta = c;
    absl::MutexLock lock(&state->mu);
    state->values = std::make_shared<std::vector<float>>(c.size);
    Model::InitialValues(spec, seed, c.offset, absl::MakeSpan(*state->values));
    if (optimizes) {
      state->optimizer_state.assign(c.size * optimizer_->state_per_param(),
                                    optimizer_->initial_state());
    }
    state->clock.assign(workers_expected, 0);
    state->position.assign(workers_expected, DataPosition{});
    state->applied.assign(workers_expected, 0);
    state->sequence_sum.assign(workers_expected, 0);
    state->duplicates.assign(workers_expected, 0);
    if (sync) {
      state->round_sum.assign(c.size, 0.0f);
      state->round_from.assign(workers_expected, false);
    }
    if (rules_.staleness.dc_lambda > 0) state->pulled.assign(workers_expected, state->values);
    state_bytes_ += sizeof(float) * (c.size + state->optimizer_state.size() +
                                     state->round_sum.size() + state->pulled.size() * c.size);
    chunks_.emplace(c.id, std::move(state));
  }
  {
    absl::MutexLock lock(&clients_mu_);
    started_ = absl::Now();
  }
  expire_thread_ = std::thread([this] { ExpireLoop(); });
}

ParameterServer::~ParameterServer() {
  CancelWaiters();
  {
    absl::MutexLock lock(&expire_mu_);
    shutting_down_ = true;
  }
  expire_thread_.join();
}

void ParameterServer::CancelWaiters() {
  closed_.store(true);
  Ready ready;
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    for (Waiter& w : chunk->waiters) ready.push_back(std::move(w.done));
    waiting_.fetch_sub(static_cast<int>(chunk->waiters.size()));
    chunk->waiters.clear();
  }
  for (auto& done : ready) done(ClosedError());
}

absl::Status ParameterServer::ClosedError() const {
  return absl::CancelledError(absl::StrCat("server ", index_, " is shutting down"));
}

absl::StatusOr<ResumePoint> ParameterServer::Hello(uint64_t plan_fingerprint, ClientRole role,
                                                   int index, uint64_t incarnation,
                                                   const std::string& peer) {
  if (plan_fingerprint != plan_.fingerprint()) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", index_, " has a different parameter layout (plan fingerprint ",
                     plan_.fingerprint(), ", client ", plan_fingerprint,
                     "): are all roles running the same job config?"));
  }
  if (role == ClientRole::kEvaluator) {
    absl::MutexLock lock(&clients_mu_);
    if (!peer.empty()) evaluator_liveness_.address = peer;
    HeardFrom(&evaluator_liveness_);
    return ResumePoint{};
  }
  if (index < 0 || index >= workers_expected_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hello from worker ", index, "; this job has workers 0..", workers_expected_ - 1));
  }
  bool rejoined;
  {
    absl::MutexLock lock(&clients_mu_);
    MONSOON_RETURN_IF_ERROR(Heard(index, incarnation));
    if (!peer.empty()) worker_liveness_[index].address = peer;
    rejoined = worker_finished_[index];
    if (rejoined) {
      worker_finished_[index] = false;
      Event(absl::StrCat("worker ", index, " (", worker_liveness_[index].address,
                         ") rejoined after finishing"));
    }
  }
  if (rejoined) LiveWorkersChanged();
  return ResumePointOf(index);
}

absl::Status ParameterServer::Heard(int index, uint64_t incarnation) {
  if (incarnation < incarnation_[index]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", index, " incarnation ", incarnation, " has been superseded by incarnation ",
        incarnation_[index], " (a newer process of this worker has connected)"));
  }
  incarnation_[index] = incarnation;
  HeardFrom(&worker_liveness_[index]);
  return absl::OkStatus();
}

void ParameterServer::HeardFrom(Liveness* client) {
  client->last_heard = absl::Now();
  if (client->lost) {
    client->lost = false;
    Event(absl::StrCat(client->who, " (", client->address, ") is back"));
  }
}

absl::Status ParameterServer::Heartbeat(ClientRole role, int index, uint64_t incarnation) {
  if (role == ClientRole::kEvaluator) {
    absl::MutexLock lock(&clients_mu_);
    HeardFrom(&evaluator_liveness_);
    return absl::OkStatus();
  }
  if (index < 0 || index >= workers_expected_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "heartbeat from worker ", index, "; this job has workers 0..", workers_expected_ - 1));
  }
  absl::MutexLock lock(&clients_mu_);
  return Heard(index, incarnation);
}

void ParameterServer::Event(std::string message) {
  events_.push_back(absl::StrCat("server ", index_, ": ", message));
}

std::vector<std::string> ParameterServer::TakeEvents() {
  absl::MutexLock lock(&clients_mu_);
  return std::move(events_);
}

absl::Status ParameterServer::Health() const {
  absl::MutexLock lock(&clients_mu_);
  return health_;
}

void ParameterServer::CheckPeers(absl::Time now) {
  // Marks a client lost that has been silent for longer than the peer timeout, or never heard
  // for longer than the join timeout; returns "who (address) lost: ..." then, else "".
  auto newly_lost = [&](Liveness* client) {
    const bool heard = client->last_heard != absl::InfinitePast();
    const absl::Duration silent =
        absl::Trunc(now - (heard ? client->last_heard : started_), absl::Milliseconds(100));
    if (client->lost || silent <= (heard ? rules_.peer_timeout : rules_.join_timeout)) {
      return std::string();
    }
    client->lost = true;
    return absl::StrCat(
        client->who, " (", client->address.empty() ? "address unknown" : client->address,
        ") lost: ", heard ? "nothing heard for " : "never heard from since the server started, ",
        absl::FormatDuration(silent), heard ? "" : " ago");
  };
  bool changed = false;
  {
    absl::MutexLock lock(&clients_mu_);
    if (evaluator_expected_ && !evaluator_finished_) {
      const std::string what = newly_lost(&evaluator_liveness_);
      if (!what.empty()) Event(absl::StrCat(what, "; the job finishes without its evaluations"));
    }
    for (int w = 0; w < workers_expected_; ++w) {
      if (worker_finished_[w]) continue;
      const std::string what = newly_lost(&worker_liveness_[w]);
      if (what.empty()) continue;
      changed = true;
      if (rules_.stop_on_worker_loss) {
        if (health_.ok()) {
          health_ = absl::UnavailableError(absl::StrCat(
              what, "; stopping the job, because ", kAlgorithmNames.Name(rules_.algorithm),
              " with every worker in the quorum cannot go on without it (set sync.quorum below "
              "cluster.workers, or reliability.worker_loss: continue)"));
        }
        Event(std::string(health_.message()));
      } else {
        Event(absl::StrCat(what, "; carrying on without it (its data shard is no longer trained)"));
      }
    }
  }
  if (changed) LiveWorkersChanged();
}

ResumePoint ParameterServer::ResumePointOf(int index) const {
  ResumePoint point{std::numeric_limits<uint64_t>::max(), {}};  // no chunks: no opinion
  for (const auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    if (chunk->clock[index] < point.sequence) {
      point = {chunk->clock[index], chunk->position[index]};
    }
  }
  return point;
}

absl::StatusOr<ParameterServer::ChunkState*> ParameterServer::Find(int chunk_id) const {
  auto it = chunks_.find(chunk_id);
  if (it == chunks_.end()) {
    return absl::NotFoundError(absl::StrCat("server ", index_, " holds no chunk ", chunk_id));
  }
  return it->second.get();
}

absl::StatusOr<size_t> ParameterServer::ChunkSize(int chunk_id) const {
  auto chunk = Find(chunk_id);
  if (!chunk.ok()) return chunk.status();
  return (*chunk)->meta.size;
}

int ParameterServer::LiveWorkers() const {
  absl::MutexLock lock(&clients_mu_);
  int live = 0;
  for (int w = 0; w < workers_expected_; ++w) live += Gone(w) ? 0 : 1;
  return live;
}

uint64_t ParameterServer::SlowestClock(const ChunkState& chunk) const {
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  absl::MutexLock lock(&clients_mu_);
  for (int w = 0; w < workers_expected_; ++w) {
    if (!Gone(w)) slowest = std::min(slowest, chunk.clock[w]);
  }
  return slowest;
}

bool ParameterServer::Satisfied(const ChunkState& chunk, const PullCondition& c) const {
  return chunk.version >= c.min_version && (c.min_clock == 0 || SlowestClock(chunk) >= c.min_clock);
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
      chunk->waiters.push_back({condition, deadline, std::move(done)});
      waiting_.fetch_add(1);
      return;
    }
  }
  done(closed ? ClosedError() : absl::OkStatus());
}

absl::Status ParameterServer::PullAfterPushAllowed() const {
  if (rules_.algorithm == Algorithm::kDownpour) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("a push with a pull after it in a ",
                                                    kAlgorithmNames.Name(rules_.algorithm),
                                                    " job: only Downpour's pulls never wait"));
}

absl::StatusOr<ChunkSnapshot> ParameterServer::Snapshot(int chunk_id, int worker) {
  auto found = Find(chunk_id);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  ChunkSnapshot snapshot;
  {
    absl::MutexLock lock(&chunk->mu);
    snapshot.values = chunk->values;
    if (!chunk->pulled.empty() && worker >= 0 && worker < workers_expected_) {
      chunk->pulled[worker] = chunk->values;
    }
    snapshot.info.version = chunk->version;
    snapshot.info.slowest_clock = SlowestClock(*chunk);
  }
  if (snapshot.info.slowest_clock == std::numeric_limits<uint64_t>::max()) {
    snapshot.info.slowest_clock = 0;
  }
  pulls_served_.fetch_add(1, std::memory_order_relaxed);
  bytes_sent_.fetch_add(chunk->meta.size * sizeof(float), std::memory_order_relaxed);
  return snapshot;
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
  WhenReady(chunk_id, condition, absl::Now() + timeout, [&](absl::Status s) {
    status = std::move(s);
    ready.Notify();
  });
  ready.WaitForNotification();
  if (!status.ok()) return status;
  return Read(chunk_id, out, worker);
}

absl::StatusOr<ParameterServer::ChunkState*> ParameterServer::Validate(
    int chunk_id, int worker_index, absl::Span<const float> payload, bool exchange,
    const PushOrigin& origin) {
  auto reject = [this](absl::Status status) {
    pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
    return status;
  };
  const char* what = exchange ? "weights" : "gradient";
  if (exchange == PushesGradients(rules_.algorithm)) {
    return reject(absl::FailedPreconditionError(
        absl::StrCat("this job runs ", kAlgorithmNames.Name(rules_.algorithm), ": workers ",
                     exchange ? "push gradients" : "exchange weights with the centre", ", not ",
                     exchange ? "weights" : "gradients")));
  }
  auto found = Find(chunk_id);
  if (!found.ok()) return reject(found.status());
  ChunkState* chunk = *found;
  if (worker_index < 0 || worker_index >= workers_expected_) {
    return reject(absl::InvalidArgumentError(absl::StrCat(
        "push from worker ", worker_index, "; this job has workers 0..", workers_expected_ - 1)));
  }
  {
    absl::MutexLock lock(&clients_mu_);
    absl::Status heard = Heard(worker_index, origin.incarnation);
    if (!heard.ok()) return reject(std::move(heard));
  }
  if (payload.size() != chunk->meta.size) {
    return reject(absl::InvalidArgumentError(absl::StrCat(what, " for chunk ", chunk_id, " has ",
                                                          payload.size(), " floats; the chunk has ",
                                                          chunk->meta.size)));
  }
  if (!AllFinite(payload)) {
    const size_t i =
        std::find_if(payload.begin(), payload.end(), [](float g) { return !std::isfinite(g); }) -
        payload.begin();
    return reject(absl::InvalidArgumentError(
        absl::StrCat(what, " for chunk ", chunk_id, " from worker ", worker_index,
                     " is not finite at element ", i, " (", payload[i], ")")));
  }
  return chunk;
}

absl::StatusOr<uint64_t> ParameterServer::StalenessOf(const ChunkState& chunk, int worker_index,
                                                      uint64_t base_version) {
  if (base_version > chunk.version) {
    pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
    return absl::InvalidArgumentError(
        absl::StrCat("push for chunk ", chunk.meta.id, " from worker ", worker_index,
                     " claims version ", base_version, "; the chunk is at ", chunk.version));
  }
  return chunk.version - base_version;
}

absl::Span<float> ParameterServer::Writable(ChunkState* chunk) {
  if (chunk->values.use_count() > 1) {
    chunk->values = std::make_shared<std::vector<float>>(*chunk->values);
  } else {
    // Sole owner. use_count() is a relaxed load; this fence orders the writes that follow
    // after the last snapshot holder's reads (its release of the reference).
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  return absl::MakeSpan(*chunk->values);
}

void ParameterServer::ApplyUpdate(ChunkState* chunk, absl::Span<const float> g, double epoch) {
  optimizer_->Apply(Writable(chunk), g, absl::MakeSpan(chunk->optimizer_state), chunk->version + 1,
                    LearningRateScale(rules_.schedule, rules_.epochs, epoch));
  ++chunk->version;
}

void ParameterServer::MaybeCloseRound(ChunkState* chunk) {
  // Complete with `quorum` fresh gradients, or once every live worker has sent one (a worker
  // that has finished still counts in the round it contributed to).
  if (chunk->round_fresh == 0) return;
  const int quorum = rules_.sync.quorum > 0 ? rules_.sync.quorum : workers_expected_;
  if (chunk->round_fresh < quorum) {
    absl::MutexLock lock(&clients_mu_);
    for (int w = 0; w < workers_expected_; ++w) {
      if (!Gone(w) && !chunk->round_from[w]) return;
    }
  }
  // The round's update is the weighted mean of its gradients.
  float* sum = chunk->round_sum.data();
  const float inv = 1.0f / chunk->round_weight;
  for (size_t i = 0, n = chunk->round_sum.size(); i < n; ++i) sum[i] *= inv;
  ApplyUpdate(chunk, chunk->round_sum, chunk->round_epoch);
  std::fill(chunk->round_sum.begin(), chunk->round_sum.end(), 0.0f);
  std::fill(chunk->round_from.begin(), chunk->round_from.end(), false);
  chunk->round_weight = 0;
  chunk->round_epoch = 0;
  chunk->round_fresh = 0;
}

void ParameterServer::CollectWaiters(ChunkState* chunk, absl::Time now,
                                     std::vector<absl::Status>* statuses, Ready* ready) {
  auto& waiters = chunk->waiters;
  for (size_t i = 0; i < waiters.size();) {
    Waiter& w = waiters[i];
    absl::Status status;
    if (Satisfied(*chunk, w.condition)) {
      status = absl::OkStatus();
    } else if (now >= w.deadline) {
      status = absl::DeadlineExceededError(absl::StrCat(
          "server ", index_, " chunk ", chunk->meta.id, ": still at version ", chunk->version,
          " (slowest worker clock ", SlowestClock(*chunk), ") at the deadline; waited for version ",
          w.condition.min_version, ", clock ", w.condition.min_clock));
    } else {
      ++i;
      continue;
    }
    statuses->push_back(std::move(status));
    ready->push_back(std::move(w.done));
    waiters[i] = std::move(waiters.back());
    waiters.pop_back();
    waiting_.fetch_sub(1);
  }
}

void ParameterServer::ReleaseWaiters(absl::Time now) {
  Ready ready;
  std::vector<absl::Status> statuses;
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    if (!chunk->waiters.empty()) CollectWaiters(chunk.get(), now, &statuses, &ready);
  }
  for (size_t i = 0; i < ready.size(); ++i) ready[i](statuses[i]);
}

void ParameterServer::ExpireLoop() {
  absl::MutexLock lock(&expire_mu_);
  absl::Time next_peer_check = absl::Now();
  while (!expire_mu_.AwaitWithTimeout(absl::Condition(&shutting_down_), kExpireInterval)) {
    const absl::Time now = absl::Now();
    const bool check_peers = now >= next_peer_check;
    if (waiting_.load() == 0 && !check_peers) continue;
    expire_mu_.Unlock();
    if (check_peers) {
      CheckPeers(now);
      next_peer_check = now + kPeerCheckInterval;
    }
    ReleaseWaiters(now);
    expire_mu_.Lock();
  }
}

absl::StatusOr<bool> ParameterServer::IsDuplicate(ChunkState* chunk, int worker,
                                                  const PushOrigin& origin, PushResult* result) {
  if (origin.sequence == 0) return false;
  const uint64_t processed = chunk->clock[worker];
  if (origin.sequence <= processed) {
    ++chunk->duplicates[worker];
    pushes_duplicate_.fetch_add(1, std::memory_order_relaxed);
    result->duplicate = true;
    result->version = chunk->version;
    return true;
  }
  if (origin.sequence > processed + 1) {
    pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
    return absl::OutOfRangeError(absl::StrCat("push ", origin.sequence, " of worker ", worker,
                                              " for chunk ", chunk->meta.id, ": push ",
                                              processed + 1, " has not arrived"));
  }
  return false;
}

void ParameterServer::Processed(ChunkState* chunk, int worker, const PushOrigin& origin,
                                bool applied) {
  ++chunk->clock[worker];
  chunk->position[worker] = origin.position;
  if (applied) {
    ++chunk->applied[worker];
    chunk->sequence_sum[worker] += origin.sequence;
  }
}

void ParameterServer::RecordValid(const PushResult& result, size_t payload_floats, int worker_index,
                                  double epoch) {
  (result.applied ? pushes_applied_ : pushes_dropped_).fetch_add(1, std::memory_order_relaxed);
  bytes_received_.fetch_add(payload_floats * sizeof(float), std::memory_order_relaxed);
  staleness_[std::min<uint64_t>(result.staleness, kStalenessBuckets - 1)].fetch_add(
      1, std::memory_order_relaxed);
  absl::MutexLock lock(&clients_mu_);
  worker_epoch_[worker_index] = std::max(worker_epoch_[worker_index], epoch);
}

absl::StatusOr<PushResult> ParameterServer::Push(int chunk_id, int worker_index,
                                                 uint64_t base_version,
                                                 absl::Span<const float> gradient,
                                                 const PushOrigin& origin) {
  auto found = Validate(chunk_id, worker_index, gradient, /*exchange=*/false, origin);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  PushResult result;
  Ready ready;
  std::vector<absl::Status> statuses;
  {
    absl::MutexLock lock(&chunk->mu);
    MONSOON_ASSIGN_OR_RETURN(const bool duplicate,
                             IsDuplicate(chunk, worker_index, origin, &result));
    if (duplicate) return result;
    auto staleness = StalenessOf(*chunk, worker_index, base_version);
    if (!staleness.ok()) return staleness.status();
    result.staleness = *staleness;
    if (rules_.algorithm == Algorithm::kSync) {
      const float weight = SyncGradientWeight(rules_.sync, result.staleness);
      if (result.staleness == 0) {
        if (chunk->round_from[worker_index]) {
          pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
          return absl::FailedPreconditionError(absl::StrCat("worker ", worker_index,
                                                            " already pushed chunk ", chunk_id,
                                                            " for round ", chunk->version));
        }
        chunk->round_from[worker_index] = true;
        ++chunk->round_fresh;
      }
      if (weight > 0) {
        AccumulateScaled(absl::MakeSpan(chunk->round_sum), gradient, weight);
        chunk->round_weight += weight;
        chunk->round_epoch = std::max(chunk->round_epoch, origin.epoch);
        result.applied = true;
      }
      Processed(chunk, worker_index, origin, result.applied);
      MaybeCloseRound(chunk);
    } else {
      const float weight = StalenessWeight(rules_.staleness, result.staleness);
      const bool compensate = !chunk->pulled.empty();
      if (weight == 1.0f && !compensate) {
        ApplyUpdate(chunk, gradient, origin.epoch);
      } else if (weight > 0) {
        thread_local std::vector<float> adjusted;
        adjusted.resize(gradient.size());
        if (compensate) {
          CompensateDelay(static_cast<float>(rules_.staleness.dc_lambda), gradient, *chunk->values,
                          *chunk->pulled[worker_index], absl::MakeSpan(adjusted));
        } else {
          std::copy(gradient.begin(), gradient.end(), adjusted.begin());
        }
        if (weight != 1.0f) {
          for (float& g : adjusted) g *= weight;
        }
        ApplyUpdate(chunk, adjusted, origin.epoch);
      }
      result.applied = weight > 0;
      Processed(chunk, worker_index, origin, result.applied);
    }
    result.version = chunk->version;
    if (!chunk->waiters.empty()) CollectWaiters(chunk, absl::InfinitePast(), &statuses, &ready);
  }
  RecordValid(result, gradient.size(), worker_index, origin.epoch);
  for (size_t i = 0; i < ready.size(); ++i) ready[i](statuses[i]);
  return result;
}

absl::StatusOr<PushResult> ParameterServer::Exchange(int chunk_id, int worker_index,
                                                     uint64_t base_version,
                                                     absl::Span<const float> weights,
                                                     absl::Span<float> difference,
                                                     const PushOrigin& origin) {
  auto found = Validate(chunk_id, worker_index, weights, /*exchange=*/true, origin);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  if (difference.size() != weights.size()) {
    return absl::InvalidArgumentError("elastic difference buffer has the wrong size");
  }
  const float alpha = static_cast<float>(ElasticAlpha(rules_.easgd, LiveWorkers()));
  PushResult result;
  {
    absl::MutexLock lock(&chunk->mu);
    MONSOON_ASSIGN_OR_RETURN(const bool duplicate,
                             IsDuplicate(chunk, worker_index, origin, &result));
    if (duplicate) {
      std::fill(difference.begin(), difference.end(), 0.0f);
      return result;
    }
    auto staleness = StalenessOf(*chunk, worker_index, base_version);
    if (!staleness.ok()) return staleness.status();
    result.staleness = *staleness;
    ElasticExchange(alpha, Writable(chunk), weights, difference);
    result.version = ++chunk->version;
    result.applied = true;
    Processed(chunk, worker_index, origin, /*applied=*/true);
  }
  RecordValid(result, weights.size(), worker_index, origin.epoch);
  bytes_sent_.fetch_add(difference.size() * sizeof(float), std::memory_order_relaxed);
  return result;
}

absl::Status ParameterServer::Finish(ClientRole role, int index) {
  {
    absl::MutexLock lock(&clients_mu_);
    if (role == ClientRole::kEvaluator) {
      evaluator_finished_ = true;
      return absl::OkStatus();
    }
    if (index < 0 || index >= workers_expected_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "finish from worker ", index, "; this job has workers 0..", workers_expected_ - 1));
    }
    worker_finished_[index] = true;
  }
  LiveWorkersChanged();
  return absl::OkStatus();
}

void ParameterServer::LiveWorkersChanged() {
  // One worker fewer: a synchronous round may now be complete, and an SSP wait may be over.
  if (rules_.algorithm == Algorithm::kSync) {
    for (auto& [id, chunk] : chunks_) {
      absl::MutexLock lock(&chunk->mu);
      MaybeCloseRound(chunk.get());
    }
  }
  ReleaseWaiters(absl::InfinitePast());
}

bool ParameterServer::AllFinishedLocked() const {
  for (int w = 0; w < workers_expected_; ++w) {
    if (!Gone(w)) return false;
  }
  return !evaluator_expected_ || evaluator_finished_ || evaluator_liveness_.lost;
}

bool ParameterServer::AllFinished() const {
  absl::MutexLock lock(&clients_mu_);
  return AllFinishedLocked();
}

bool ParameterServer::WaitAllFinished(absl::Duration timeout) const {
  absl::MutexLock lock(&clients_mu_);
  return clients_mu_.AwaitWithTimeout(absl::Condition(this, &ParameterServer::AllFinishedLocked),
                                      timeout);
}

ServerStats ParameterServer::Stats() const {
  ServerStats s;
  s.server_index = index_;
  s.pushes_applied = pushes_applied_.load();
  s.pushes_dropped = pushes_dropped_.load();
  s.pushes_rejected = pushes_rejected_.load();
  s.pushes_duplicate = pushes_duplicate_.load();
  s.pulls_served = pulls_served_.load();
  s.bytes_received = bytes_received_.load();
  s.bytes_sent = bytes_sent_.load();
  s.workers_expected = workers_expected_;
  for (const auto& bucket : staleness_) s.staleness_histogram.push_back(bucket.load());
  absl::MutexLock lock(&clients_mu_);
  s.workers_finished =
      static_cast<int>(std::count(worker_finished_.begin(), worker_finished_.end(), true));
  s.evaluator_finished = evaluator_finished_;
  s.worker_epochs = worker_epoch_;
  for (int w = 0; w < workers_expected_; ++w) {
    if (worker_liveness_[w].lost) s.workers_lost.push_back(w);
  }
  return s;
}

std::vector<LedgerEntry> ParameterServer::Ledger() const {
  std::vector<LedgerEntry> ledger;
  for (const auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    for (int w = 0; w < workers_expected_; ++w) {
      ledger.push_back({id, w, chunk->clock[w], chunk->applied[w], chunk->sequence_sum[w],
                        chunk->duplicates[w]});
    }
  }
  return ledger;
}

namespace {
// Identifies what a checkpoint belongs to; LoadCheckpoint refuses any other.
struct CheckpointHeader {
  int64_t server_index;
  uint64_t plan_fingerprint;
  int64_t algorithm;
  int64_t workers;
  int64_t chunks;
};
}  // namespace

void ParameterServer::SaveCheckpoint(CheckpointWriter* out) const {
  out->Pod(CheckpointHeader{index_, plan_.fingerprint(), static_cast<int64_t>(rules_.algorithm),
                            workers_expected_, static_cast<int64_t>(chunks_.size())});
  {
    absl::MutexLock lock(&clients_mu_);
    out->Vector(incarnation_);
  }
  for (const auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    out->Pod<int64_t>(id);
    out->Pod(chunk->version);
    out->Vector(*chunk->values);
    out->Vector(chunk->optimizer_state);
    out->Vector(chunk->clock);
    out->Vector(chunk->position);
    out->Vector(chunk->applied);
    out->Vector(chunk->sequence_sum);
    out->Vector(chunk->duplicates);
    out->Vector(chunk->round_sum);
    out->Pod(chunk->round_weight);
    out->Pod(chunk->round_epoch);
    out->Pod<int64_t>(chunk->round_fresh);
    out->Vector(std::vector<uint8_t>(chunk->round_from.begin(), chunk->round_from.end()));
  }
}

absl::Status ParameterServer::LoadCheckpoint(CheckpointReader* in) {
  CheckpointHeader h;
  MONSOON_RETURN_IF_ERROR(in->Pod(&h));
  if (h.server_index != index_ || h.plan_fingerprint != plan_.fingerprint() ||
      h.algorithm != static_cast<int64_t>(rules_.algorithm) || h.workers != workers_expected_ ||
      h.chunks != static_cast<int64_t>(chunks_.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", in->path(), " belongs to another job layout (server ", h.server_index, ", ",
        kAlgorithmNames.Name(static_cast<Algorithm>(h.algorithm)), ", ", h.workers,
        " workers, plan ", h.plan_fingerprint, "); this is server ", index_, ", ",
        kAlgorithmNames.Name(rules_.algorithm), ", ", workers_expected_, " workers, plan ",
        plan_.fingerprint()));
  }
  std::vector<uint64_t> incarnations;
  MONSOON_RETURN_IF_ERROR(in->Vector(workers_expected_, &incarnations));
  const size_t n = workers_expected_;
  for (auto& [id, chunk] : chunks_) {
    absl::MutexLock lock(&chunk->mu);
    int64_t stored_id = -1;
    MONSOON_RETURN_IF_ERROR(in->Pod(&stored_id));
    if (stored_id != id) {
      return absl::DataLossError(absl::StrCat("checkpoint ", in->path(), " has chunk ", stored_id,
                                              " where chunk ", id, " was expected"));
    }
    MONSOON_RETURN_IF_ERROR(in->Pod(&chunk->version));
    auto values = std::make_shared<std::vector<float>>();
    MONSOON_RETURN_IF_ERROR(in->Vector(chunk->meta.size, values.get()));
    chunk->values = std::move(values);
    MONSOON_RETURN_IF_ERROR(in->Vector(chunk->optimizer_state.size(), &chunk->optimizer_state));
    MONSOON_RETURN_IF_ERROR(in->Vector(n, &chunk->clock));
    MONSOON_RETURN_IF_ERROR(in->Vector(n, &chunk->position));
    MONSOON_RETURN_IF_ERROR(in->Vector(n, &chunk->applied));
    MONSOON_RETURN_IF_ERROR(in->Vector(n, &chunk->sequence_sum));
    MONSOON_RETURN_IF_ERROR(in->Vector(n, &chunk->duplicates));
    MONSOON_RETURN_IF_ERROR(in->Vector(chunk->round_sum.size(), &chunk->round_sum));
    MONSOON_RETURN_IF_ERROR(in->Pod(&chunk->round_weight));
    MONSOON_RETURN_IF_ERROR(in->Pod(&chunk->round_epoch));
    int64_t fresh = 0;
    MONSOON_RETURN_IF_ERROR(in->Pod(&fresh));
    chunk->round_fresh = static_cast<int>(fresh);
    std::vector<uint8_t> from;
    MONSOON_RETURN_IF_ERROR(in->Vector(chunk->round_from.size(), &from));
    chunk->round_from.assign(from.begin(), from.end());
    // DC-ASGD: what each worker pulled is not kept; it pulls again after the restart.
    for (auto& pulled : chunk->pulled) pulled = chunk->values;
  }
  MONSOON_RETURN_IF_ERROR(in->Finish());
  absl::MutexLock lock(&clients_mu_);
  incarnation_ = std::move(incarnations);
  started_ = absl::Now();  // the join timeout counts from here: loading can take a while
  return absl::OkStatus();
}

}  // namespace monsoon
