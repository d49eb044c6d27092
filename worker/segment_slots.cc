#include "worker/segment_slots.h"

#include <utility>

namespace monsoon {

SegmentSlots::SegmentSlots(std::unique_ptr<SharedSegment> memory, uint64_t id,
                           const ShardingPlan& plan, int server)
    : memory_(std::move(memory)),
      id_(id),
      layout_(plan, server),
      num_chunks_(plan.num_chunks()),
      busy_(new std::atomic<bool>[static_cast<size_t>(kSegmentAreas) * plan.num_chunks()]()) {}

uint8_t* SegmentSlots::Claim(SegmentArea area, int chunk_id) {
  if (!layout_.Holds(chunk_id)) return nullptr;
  bool free = false;
  if (!busy_[Index(area, chunk_id)].compare_exchange_strong(free, true)) return nullptr;
  return memory_->data() + layout_.Offset(area, chunk_id);
}

void SegmentSlots::Release(SegmentArea area, int chunk_id) {
  busy_[Index(area, chunk_id)].store(false);
}

}  // namespace monsoon
