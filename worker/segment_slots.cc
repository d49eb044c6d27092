#include "worker/segment_slots.h"

#include <utility>

namespace monsoon {

SegmentSlots::SegmentSlots(std::unique_ptr<SharedSegment> memory, uint64_t id,
                           const SegmentLayout& layout)
    : memory_(std::move(memory)), id_(id), layout_(layout) {
  for (int slot = static_cast<int>(layout.slots) - 1; slot >= 0; --slot) free_.push_back(slot);
}

int SegmentSlots::Claim() {
  absl::MutexLock lock(&mu_);
  if (free_.empty()) return -1;
  const int slot = free_.back();
  free_.pop_back();
  return slot;
}

void SegmentSlots::Release(int slot) {
  absl::MutexLock lock(&mu_);
  free_.push_back(slot);
}

}  // namespace monsoon
