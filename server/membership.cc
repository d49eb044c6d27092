#include "server/membership.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace monsoon {

Membership::Membership(int server_index, int workers, bool evaluator, const ServerRules& rules,
                       absl::Time started)
    : server_index_(server_index),
      workers_(workers),
      evaluator_expected_(evaluator),
      rules_(rules),
      finished_(workers, false),
      epoch_(workers, 0.0),
      incarnation_(workers, 0),
      started_(started) {
  for (int w = 0; w < workers; ++w) liveness_.emplace_back(absl::StrCat("worker ", w));
}

absl::Status Membership::CheckWorker(const char* what, int index) const {
  if (index >= 0 && index < workers_) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " from worker ", index, "; this job has workers 0..", workers_ - 1));
}

absl::Status Membership::HeardWorker(int index, uint64_t incarnation, absl::Time now,
                                     const std::string& peer) {
  absl::MutexLock lock(&mu_);
  if (incarnation < incarnation_[index]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", index, " incarnation ", incarnation, " has been superseded by incarnation ",
        incarnation_[index], " (a newer process of this worker has connected)"));
  }
  incarnation_[index] = incarnation;
  if (!peer.empty()) liveness_[index].address = peer;
  Heard(&liveness_[index], now);
  return absl::OkStatus();
}

bool Membership::Rejoin(int index) {
  absl::MutexLock lock(&mu_);
  if (!finished_[index]) return false;
  finished_[index] = false;
  Event(
      absl::StrCat("worker ", index, " (", liveness_[index].address, ") rejoined after finishing"));
  return true;
}

void Membership::HeardEvaluator(absl::Time now, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  if (!peer.empty()) evaluator_.address = peer;
  Heard(&evaluator_, now);
}

void Membership::Heard(Liveness* client, absl::Time now) {
  client->last_heard = now;
  if (client->lost) {
    client->lost = false;
    Event(absl::StrCat(client->who, " (", client->address, ") is back"));
  }
}

absl::StatusOr<bool> Membership::Finish(RoleKind role, int index) {
  absl::MutexLock lock(&mu_);
  if (role == RoleKind::kEvaluator) {
    evaluator_finished_ = true;
    return false;
  }
  MONSOON_RETURN_IF_ERROR(CheckWorker("finish", index));
  finished_[index] = true;
  return true;
}

std::string Membership::NewlyLost(Liveness* client, absl::Time now) {
  const bool heard = client->last_heard != absl::InfinitePast();
  const absl::Duration silent =
      absl::Trunc(now - (heard ? client->last_heard : started_), absl::Milliseconds(100));
  if (client->lost || silent <= (heard ? rules_.peer_timeout : rules_.join_timeout)) return "";
  client->lost = true;
  return absl::StrCat(
      client->who, " (", client->address.empty() ? "address unknown" : client->address,
      ") lost: ", heard ? "nothing heard for " : "never heard from since the server started, ",
      absl::FormatDuration(silent), heard ? "" : " ago");
}

void Membership::WorkerLost(const std::string& what) {
  if (!rules_.stop_on_worker_loss) {
    Event(absl::StrCat(what, "; carrying on without it (its data shard is no longer trained)"));
    return;
  }
  if (health_.ok()) {
    health_ = absl::UnavailableError(absl::StrCat(
        what, "; stopping the job, because ", kAlgorithmNames.Name(rules_.algorithm),
        " with every worker in the quorum cannot go on without it (set sync.quorum below "
        "cluster.workers, or reliability.worker_loss: continue)"));
  }
  Event(std::string(health_.message()));
}

void Membership::ExcuseStall(absl::Duration stall) {
  for (Liveness& client : liveness_) {
    if (client.last_heard != absl::InfinitePast()) client.last_heard += stall;
  }
  if (evaluator_.last_heard != absl::InfinitePast()) evaluator_.last_heard += stall;
  started_ += stall;
  Event(absl::StrCat("this server did not run for ",
                     absl::FormatDuration(absl::Trunc(stall, absl::Milliseconds(100))),
                     " (stopped, or its machine stalled): that silence does not count against "
                     "its peers"));
}

bool Membership::CheckPeers(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (last_check_ != absl::InfinitePast() && now - last_check_ > kStallGap) {
    ExcuseStall(now - last_check_);
  }
  last_check_ = now;
  if (evaluator_expected_ && !evaluator_finished_) {
    const std::string what = NewlyLost(&evaluator_, now);
    if (!what.empty()) Event(absl::StrCat(what, "; the job finishes without its evaluations"));
  }
  bool changed = false;
  for (int w = 0; w < workers_; ++w) {
    if (finished_[w]) continue;
    const std::string what = NewlyLost(&liveness_[w], now);
    if (what.empty()) continue;
    changed = true;
    WorkerLost(what);
  }
  return changed;
}

bool Membership::GoneLocked(int worker) const {
  return finished_[worker] || liveness_[worker].lost;
}

bool Membership::Gone(int worker) const {
  absl::MutexLock lock(&mu_);
  return GoneLocked(worker);
}

int Membership::LiveWorkers() const {
  absl::MutexLock lock(&mu_);
  int live = 0;
  for (int w = 0; w < workers_; ++w) live += GoneLocked(w) ? 0 : 1;
  return live;
}

uint64_t Membership::SlowestClock(absl::Span<const uint64_t> clocks) const {
  uint64_t slowest = std::numeric_limits<uint64_t>::max();
  absl::MutexLock lock(&mu_);
  for (int w = 0; w < workers_; ++w) {
    if (!GoneLocked(w)) slowest = std::min(slowest, clocks[w]);
  }
  return slowest;
}

bool Membership::EveryLiveWorkerIn(const std::vector<bool>& from) const {
  absl::MutexLock lock(&mu_);
  for (int w = 0; w < workers_; ++w) {
    if (!GoneLocked(w) && !from[w]) return false;
  }
  return true;
}

void Membership::RecordEpoch(int index, double epoch) {
  absl::MutexLock lock(&mu_);
  epoch_[index] = std::max(epoch_[index], epoch);
}

bool Membership::AllFinishedLocked() const {
  for (int w = 0; w < workers_; ++w) {
    if (!GoneLocked(w)) return false;
  }
  return !evaluator_expected_ || evaluator_finished_ || evaluator_.lost;
}

bool Membership::AllFinished() const {
  absl::MutexLock lock(&mu_);
  return AllFinishedLocked();
}

bool Membership::WaitAllFinished(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(this, &Membership::AllFinishedLocked), timeout);
}

absl::Status Membership::Health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void Membership::Event(const std::string& message) {
  events_.push_back(absl::StrCat("server ", server_index_, ": ", message));
}

std::vector<std::string> Membership::TakeEvents() {
  absl::MutexLock lock(&mu_);
  return std::move(events_);
}

void Membership::FillStats(ServerStats* stats) const {
  absl::MutexLock lock(&mu_);
  stats->workers_expected = workers_;
  stats->workers_finished = static_cast<int>(std::count(finished_.begin(), finished_.end(), true));
  stats->evaluator_finished = evaluator_finished_;
  stats->worker_epochs = epoch_;
  for (int w = 0; w < workers_; ++w) {
    if (liveness_[w].lost) stats->workers_lost.push_back(w);
    if (finished_[w]) stats->finished_workers.push_back(w);
  }
}

std::vector<uint64_t> Membership::incarnations() const {
  absl::MutexLock lock(&mu_);
  return incarnation_;
}

void Membership::Restore(std::vector<uint64_t> incarnations, absl::Time started) {
  absl::MutexLock lock(&mu_);
  incarnation_ = std::move(incarnations);
  started_ = started;
  last_check_ = started;  // the load is not a stall
}

}  // namespace monsoon
