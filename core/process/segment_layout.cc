#include "core/process/segment_layout.h"

#include <algorithm>

namespace monsoon {

SegmentLayout SegmentLayout::For(const ShardingPlan& plan, size_t slots) {
  constexpr size_t kAlign = 64;
  const size_t chunk_bytes = plan.max_chunk_size() * sizeof(float);
  return {slots, (chunk_bytes + kAlign - 1) / kAlign * kAlign};
}

SegmentLayout SegmentLayout::OfSize(size_t bytes, size_t slot_bytes) {
  const size_t slots =
      bytes > kSegmentPage ? (bytes - kSegmentPage) / (kSegmentPage + slot_bytes) : 0;
  return {slots, slot_bytes};
}

size_t SegmentLayout::SlotsWanted(const ShardingPlan& plan, int server, int max_in_flight) {
  const size_t calls =
      std::min(plan.ChunksOf(server).size(), static_cast<size_t>(std::max(1, max_in_flight)));
  return std::min(3 * calls, kMaxSegmentSlots);
}

}  // namespace monsoon
