#include "worker/stall_watch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "core/exit_status.h"

namespace monsoon {

StallWatch::StallWatch(std::string who, double stall_seconds)
    : who_(std::move(who)), given_(absl::Seconds(stall_seconds)) {
  thread_ = std::thread([this] { Watch(); });
}

StallWatch::~StallWatch() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  thread_.join();
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
  if (given_ > absl::ZeroDuration()) return given_;
  if (!finished_step_) return absl::InfiniteDuration();
  return std::max(kAutoFloor, 10 * longest_);
}

void StallWatch::Watch() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Seconds(1))) {
    if (!since_.has_value()) continue;
    const absl::Duration limit = LimitLocked();
    if (absl::Now() - *since_ <= limit) continue;
    const std::string report =
        absl::StrFormat("%s made no progress for %.0f s, stuck at step %d in compute", who_,
                        absl::ToDoubleSeconds(limit), step_);
    std::fprintf(stderr, "monsoon: %s\n", report.c_str());
    std::fflush(stderr);
    RecordExit({0, kExitStalled, ExitCause::kStalled, report, ""});
    _exit(kExitStalled);  // the compute holds the role's thread: nothing else can end it
  }
}

}  // namespace monsoon
