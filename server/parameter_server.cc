#include "server/parameter_server.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

// True when no value is NaN or +-Inf (exponent bits all ones). Branch-free so that it
// vectorises: a push is scanned in full before any of it is applied.
bool AllFinite(absl::Span<const float> values) {
  uint32_t bad = 0;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace

ParameterServer::ParameterServer(int index, const ShardingPlan& plan, const ModelSpec& spec,
                                 uint64_t seed, std::unique_ptr<UpdateRule> rule,
                                 int workers_expected, bool evaluator_expected)
    : index_(index),
      plan_(plan),
      rule_(std::move(rule)),
      workers_expected_(workers_expected),
      evaluator_expected_(evaluator_expected),
      worker_finished_(workers_expected, false) {
  for (const Chunk& c : plan_.ChunksOf(index)) {
    auto state = std::make_unique<ChunkState>();
    state->meta = c;
    absl::MutexLock lock(&state->mu);
    state->values.resize(c.size);
    Model::InitialValues(spec, seed, c.offset, absl::MakeSpan(state->values));
    state->state.assign(c.size * rule_->state_per_param(), rule_->initial_state());
    chunks_.emplace(c.id, std::move(state));
  }
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

absl::StatusOr<uint64_t> ParameterServer::Pull(int chunk_id, absl::Span<float> out) {
  auto found = Find(chunk_id);
  if (!found.ok()) return found.status();
  ChunkState* chunk = *found;
  if (out.size() != chunk->meta.size) {
    return absl::InvalidArgumentError(absl::StrCat("pull of chunk ", chunk_id, " into ", out.size(),
                                                   " floats; it has ", chunk->meta.size));
  }
  uint64_t version;
  {
    absl::MutexLock lock(&chunk->mu);
    std::copy(chunk->values.begin(), chunk->values.end(), out.begin());
    version = chunk->version;
  }
  pulls_served_.fetch_add(1, std::memory_order_relaxed);
  bytes_sent_.fetch_add(out.size() * sizeof(float), std::memory_order_relaxed);
  return version;
}

absl::StatusOr<uint64_t> ParameterServer::Push(int chunk_id, int worker_index,
                                               uint64_t /*base_version*/,
                                               absl::Span<const float> gradient) {
  auto reject = [this](absl::Status status) {
    pushes_rejected_.fetch_add(1, std::memory_order_relaxed);
    return status;
  };
  auto found = Find(chunk_id);
  if (!found.ok()) return reject(found.status());
  ChunkState* chunk = *found;
  if (worker_index < 0 || worker_index >= workers_expected_) {
    return reject(absl::InvalidArgumentError(absl::StrCat(
        "push from worker ", worker_index, "; this job has workers 0..", workers_expected_ - 1)));
  }
  if (gradient.size() != chunk->meta.size) {
    return reject(absl::InvalidArgumentError(
        absl::StrCat("gradient for chunk ", chunk_id, " has ", gradient.size(),
                     " floats; the chunk has ", chunk->meta.size)));
  }
  if (!AllFinite(gradient)) {
    const size_t i =
        std::find_if(gradient.begin(), gradient.end(), [](float g) { return !std::isfinite(g); }) -
        gradient.begin();
    return reject(absl::InvalidArgumentError(
        absl::StrCat("gradient for chunk ", chunk_id, " from worker ", worker_index,
                     " is not finite at element ", i, " (", gradient[i], ")")));
  }
  uint64_t version;
  {
    absl::MutexLock lock(&chunk->mu);
    rule_->ApplyPush(absl::MakeSpan(chunk->values), gradient, absl::MakeSpan(chunk->state));
    version = ++chunk->version;
  }
  pushes_applied_.fetch_add(1, std::memory_order_relaxed);
  bytes_received_.fetch_add(gradient.size() * sizeof(float), std::memory_order_relaxed);
  return version;
}

absl::Status ParameterServer::Finish(ClientRole role, int index) {
  absl::MutexLock lock(&finish_mu_);
  if (role == ClientRole::kEvaluator) {
    evaluator_finished_ = true;
    return absl::OkStatus();
  }
  if (index < 0 || index >= workers_expected_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "finish from worker ", index, "; this job has workers 0..", workers_expected_ - 1));
  }
  worker_finished_[index] = true;
  return absl::OkStatus();
}

bool ParameterServer::AllFinishedLocked() const {
  return std::all_of(worker_finished_.begin(), worker_finished_.end(), [](bool b) { return b; }) &&
         (!evaluator_expected_ || evaluator_finished_);
}

bool ParameterServer::AllFinished() const {
  absl::MutexLock lock(&finish_mu_);
  return AllFinishedLocked();
}

bool ParameterServer::WaitAllFinished(absl::Duration timeout) const {
  absl::MutexLock lock(&finish_mu_);
  return finish_mu_.AwaitWithTimeout(absl::Condition(this, &ParameterServer::AllFinishedLocked),
                                     timeout);
}

ServerStats ParameterServer::Stats() const {
  ServerStats s;
  s.server_index = index_;
  s.pushes_applied = pushes_applied_.load();
  s.pushes_rejected = pushes_rejected_.load();
  s.pulls_served = pulls_served_.load();
  s.bytes_received = bytes_received_.load();
  s.bytes_sent = bytes_sent_.load();
  s.workers_expected = workers_expected_;
  absl::MutexLock lock(&finish_mu_);
  s.workers_finished =
      static_cast<int>(std::count(worker_finished_.begin(), worker_finished_.end(), true));
  s.evaluator_finished = evaluator_finished_;
  return s;
}

}  // namespace monsoon
