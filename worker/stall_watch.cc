#include "worker/stall_watch.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "core/exit_status.h"

namespace monsoon {

StallWatch::StallWatch(std::string who, double stall_seconds, double first_step_seconds)
    : who_(std::move(who)),
      off_(stall_seconds < 0),
      given_(absl::Seconds(stall_seconds)),
      first_step_(absl::Seconds(first_step_seconds)) {
  if (!off_) thread_ = std::thread([this] { Watch(); });
}

StallWatch::~StallWatch() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void StallWatch::Begin(int64_t step) {
  absl::MutexLock lock(&mu_);
  since_ = absl::Now();
  step_ = step;
}

void StallWatch::End() {
  absl::MutexLock lock(&mu_);
  if (!since_.has_value()) return;
  longest_ = std::max(longest_, absl::Now() - *since_);
  finished_step_ = true;
  since_.reset();
}

absl::Duration StallWatch::limit() const {
  absl::MutexLock lock(&mu_);
  return LimitLocked();
}

absl::Duration StallWatch::LimitLocked() const {
  if (off_) return absl::InfiniteDuration();
  if (!finished_step_) return first_step_;
  if (given_ > absl::ZeroDuration()) return given_;
  return std::max(kAutoFloor, 10 * longest_);
}

void StallWatch::Watch() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Seconds(1))) {
    if (!since_.has_value()) continue;
    const absl::Duration running = absl::Now() - *since_;
    if (!finished_step_) NoticeFirstStepLocked(running);
    const absl::Duration limit = LimitLocked();
    if (running > limit) EndStalledLocked(limit);
  }
}

void StallWatch::NoticeFirstStepLocked(absl::Duration running) {
  if (noticed_ || running < kFirstStepNotice || first_step_ <= kFirstStepNotice) return;
  noticed_ = true;
  std::fprintf(stderr,
               "monsoon: %s: its first step has computed for %.0f s (loading, compiling or "
               "connecting, say); reliability.first_step_seconds allows %.0f\n",
               who_.c_str(), absl::ToDoubleSeconds(running), absl::ToDoubleSeconds(first_step_));
  std::fflush(stderr);
}

void StallWatch::EndStalledLocked(absl::Duration limit) {
  const std::string report =
      finished_step_
          ? absl::StrFormat("%s made no progress for %.0f s, stuck at step %d in compute", who_,
                            absl::ToDoubleSeconds(limit), step_)
          : absl::StrFormat("%s made no progress for %.0f s in its first step "
                            "(reliability.first_step_seconds), stuck at step %d in compute",
                            who_, absl::ToDoubleSeconds(limit), step_);
  std::fprintf(stderr, "monsoon: %s\n", report.c_str());
  std::fflush(stderr);
  struct sigaction dump;
  if (sigaction(SIGUSR2, nullptr, &dump) == 0 && dump.sa_handler != SIG_DFL &&
      dump.sa_handler != SIG_IGN) {
    raise(SIGUSR2);  // where it is stuck: a worker program's stacks
  }
  RecordExit({0, kExitStalled, RecordedExitCause::kStalled, report, ""});
  _exit(kExitStalled);  // the compute holds the role's thread: nothing else can end it
}

}  // namespace monsoon
