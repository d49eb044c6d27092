#include "server/parameter_server.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/multiversion.h"
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

}  // namespace

ServerRules ServerRules::FromConfig(const JobConfig& config) {
  ServerRules rules;
  rules.algorithm = config.training.algorithm;
  rules.optimizer = config.optimizer;
  rules.staleness = config.staleness;
  rules.sync = config.sync;
  rules.easgd = config.easgd;
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
      worker_epoch_(workers_expected, 0.0) {
  const bool sync = rules_.algorithm == Algorithm::kSync;
  const bool optimizes = PushesGradients(rules_.algorithm);
  for (const Chunk& c : plan_.ChunksOf(index)) {
    auto state = std::make_unique<ChunkState>();
    state->meta = c;
    absl::MutexLock lock(&state->mu);
    state->values.resize(c.size);
    Model::InitialValues(spec, seed, c.offset, absl::MakeSpan(state->values));
    if (optimizes) {
      state->optimizer_state.assign(c.size * optimizer_->state_per_param(),
                                    optimizer_->initial_state());
    }
    state->clock.assign(workers_expected, 0);
    if (sync) {
      state->round_sum.assign(c.size, 0.0f);
      state->round_from.assign(workers_expected, false);
    }
    if (rules_.staleness.dc_lambda > 0) state->pulled.assign(workers_expected, state->values);
    state_bytes_ += sizeof(float) * (state->values.size() + state->optimizer_state.size() +
                                     state->round_sum.size() + state->pulled.size() * c.size);
    chunks_.emplace(c.id, std::move(state));
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

absl::Status ParameterServer::Hello(uint64_t plan_fingerprint) const {
  if (plan_fingerprint != plan_.fingerprint()) {
    return absl::FailedPreconditionError(
        absl::StrCat("server ", index_, " has a different parameter layout (plan fingerprint ",
                     plan_.fingerprint(), ", client ", plan_fingerprint,
                     "): are all roles running the same job config?"));
  }
  return absl::OkStatus();
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
  return static_cast<int>(std::count(worker_finished_.begin(), worker_finished_.end(), false));
}

uint64_t ParameterServer::SlowestClock(const ChunkState& chunk) const {
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  absl::MutexLock lock(&clients_mu_);
  for (int w = 0; w < workers_expected_; ++w) {
    if (!worker_finished_[w]) slowest = std::min(slowest, chunk.clock[w]);
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

absl::StatusOr<PullInfo> ParameterServer::Read(int chunk_id, absl::Span<float> out, int worker) {
  auto found = Find(chunk_id);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  if (out.size() != chunk->meta.size) {
    return absl::InvalidArgumentError(absl::StrCat("pull of chunk ", chunk_id, " into ", out.size(),
                                                   " floats; it has ", chunk->meta.size));
  }
  PullInfo info;
  {
    absl::MutexLock lock(&chunk->mu);
    std::copy(chunk->values.begin(), chunk->values.end(), out.begin());
    if (!chunk->pulled.empty() && worker >= 0 && worker < workers_expected_) {
      chunk->pulled[worker] = chunk->values;
    }
    info.version = chunk->version;
    info.slowest_clock = SlowestClock(*chunk);
  }
  if (info.slowest_clock == std::numeric_limits<uint64_t>::max()) info.slowest_clock = 0;
  pulls_served_.fetch_add(1, std::memory_order_relaxed);
  bytes_sent_.fetch_add(out.size() * sizeof(float), std::memory_order_relaxed);
  return info;
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
    int chunk_id, int worker_index, absl::Span<const float> payload, bool exchange) {
  auto reject = [this](absl::Status status) {
    pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
    return status;
  };
  const char* what = exchange ? "weights" : "gradient";
  if (exchange == PushesGradients(rules_.algorithm)) {
    return reject(absl::FailedPreconditionError(
        absl::StrCat("this job runs ", AlgorithmName(rules_.algorithm), ": workers ",
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

void ParameterServer::ApplyUpdate(ChunkState* chunk, absl::Span<const float> g) {
  optimizer_->Apply(absl::MakeSpan(chunk->values), g, absl::MakeSpan(chunk->optimizer_state),
                    chunk->version + 1);
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
      if (!worker_finished_[w] && !chunk->round_from[w]) return;
    }
  }
  // The round's update is the weighted mean of its gradients.
  float* sum = chunk->round_sum.data();
  const float inv = 1.0f / chunk->round_weight;
  for (size_t i = 0, n = chunk->round_sum.size(); i < n; ++i) sum[i] *= inv;
  ApplyUpdate(chunk, chunk->round_sum);
  std::fill(chunk->round_sum.begin(), chunk->round_sum.end(), 0.0f);
  std::fill(chunk->round_from.begin(), chunk->round_from.end(), false);
  chunk->round_weight = 0;
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
  while (!expire_mu_.AwaitWithTimeout(absl::Condition(&shutting_down_), kExpireInterval)) {
    if (waiting_.load() == 0) continue;
    expire_mu_.Unlock();
    ReleaseWaiters(absl::Now());
    expire_mu_.Lock();
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
                                                 absl::Span<const float> gradient, double epoch) {
  auto found = Validate(chunk_id, worker_index, gradient, /*exchange=*/false);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  PushResult result;
  Ready ready;
  std::vector<absl::Status> statuses;
  {
    absl::MutexLock lock(&chunk->mu);
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
        result.applied = true;
      }
      ++chunk->clock[worker_index];
      MaybeCloseRound(chunk);
    } else {
      const float weight = StalenessWeight(rules_.staleness, result.staleness);
      const bool compensate = !chunk->pulled.empty();
      if (weight == 1.0f && !compensate) {
        ApplyUpdate(chunk, gradient);
      } else if (weight > 0) {
        thread_local std::vector<float> adjusted;
        adjusted.resize(gradient.size());
        if (compensate) {
          CompensateDelay(static_cast<float>(rules_.staleness.dc_lambda), gradient, chunk->values,
                          chunk->pulled[worker_index], absl::MakeSpan(adjusted));
        } else {
          std::copy(gradient.begin(), gradient.end(), adjusted.begin());
        }
        if (weight != 1.0f) {
          for (float& g : adjusted) g *= weight;
        }
        ApplyUpdate(chunk, adjusted);
      }
      result.applied = weight > 0;
      ++chunk->clock[worker_index];
    }
    result.version = chunk->version;
    if (!chunk->waiters.empty()) CollectWaiters(chunk, absl::InfinitePast(), &statuses, &ready);
  }
  RecordValid(result, gradient.size(), worker_index, epoch);
  for (size_t i = 0; i < ready.size(); ++i) ready[i](statuses[i]);
  return result;
}

absl::StatusOr<PushResult> ParameterServer::Exchange(int chunk_id, int worker_index,
                                                     uint64_t base_version,
                                                     absl::Span<const float> weights,
                                                     absl::Span<float> difference, double epoch) {
  auto found = Validate(chunk_id, worker_index, weights, /*exchange=*/true);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  if (difference.size() != weights.size()) {
    return absl::InvalidArgumentError("elastic difference buffer has the wrong size");
  }
  const float alpha = static_cast<float>(ElasticAlpha(rules_.easgd, LiveWorkers()));
  PushResult result;
  {
    absl::MutexLock lock(&chunk->mu);
    auto staleness = StalenessOf(*chunk, worker_index, base_version);
    if (!staleness.ok()) return staleness.status();
    result.staleness = *staleness;
    ElasticExchange(alpha, absl::MakeSpan(chunk->values), weights, difference);
    result.version = ++chunk->version;
    result.applied = true;
    ++chunk->clock[worker_index];
  }
  RecordValid(result, weights.size(), worker_index, epoch);
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
  // One worker fewer: a synchronous round may now be complete, and an SSP wait may be over.
  if (rules_.algorithm == Algorithm::kSync) {
    for (auto& [id, chunk] : chunks_) {
      absl::MutexLock lock(&chunk->mu);
      MaybeCloseRound(chunk.get());
    }
  }
  ReleaseWaiters(absl::InfinitePast());
  return absl::OkStatus();
}

bool ParameterServer::AllFinishedLocked() const {
  return std::all_of(worker_finished_.begin(), worker_finished_.end(), [](bool b) { return b; }) &&
         (!evaluator_expected_ || evaluator_finished_);
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
  return s;
}

}  // namespace monsoon
