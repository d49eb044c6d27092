#include "launcher/simulation/shared_link.h"

#include <algorithm>
#include <utility>

namespace monsoon {
namespace {

// Bytes left below this count as sent (rounding in the shares).
constexpr double kSentBytes = 1e-6;

}  // namespace

void SharedLink::Send(double bytes, std::function<void()> arrived) {
  if (bytes_per_second_ <= 0) {
    loop_->After(latency_, std::move(arrived));
    return;
  }
  Advance();
  active_.push_back({bytes, std::move(arrived)});
  busiest_ = std::max(busiest_, static_cast<int>(active_.size()));
  ScheduleNext();
}

void SharedLink::Advance() {
  const double now = loop_->seconds();
  if (!active_.empty()) {
    const double each = (now - updated_) * bytes_per_second_ / active_.size();
    for (Transfer& t : active_) t.remaining -= each;
  }
  updated_ = now;
}

double SharedLink::LeastRemaining() const {
  double least = active_.front().remaining;
  for (const Transfer& t : active_) least = std::min(least, t.remaining);
  return std::max(least, 0.0);
}

void SharedLink::ScheduleNext() {
  const uint64_t generation = ++generation_;
  if (active_.empty()) return;
  const double end = loop_->seconds() + LeastRemaining() * active_.size() / bytes_per_second_;
  loop_->At(end, [this, generation] {
    if (generation == generation_) Finish();
  });
}

void SharedLink::Finish() {
  Advance();
  const double least = LeastRemaining();
  auto sent = std::stable_partition(active_.begin(), active_.end(), [&](const Transfer& t) {
    return t.remaining <= least + kSentBytes;
  });
  for (auto it = active_.begin(); it != sent; ++it) loop_->After(latency_, std::move(it->arrived));
  active_.erase(active_.begin(), sent);
  ScheduleNext();
}

}  // namespace monsoon
