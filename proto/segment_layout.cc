#include "proto/segment_layout.h"

namespace monsoon {

SegmentLayout::SegmentLayout(const ShardingPlan& plan, int server)
    : offsets_(plan.num_chunks(), -1), capacities_(plan.num_chunks(), 0) {
  constexpr size_t kAlign = 64;
  for (const Chunk& c : plan.chunks()) {
    if (c.server != server) continue;
    offsets_[c.id] = static_cast<long long>(area_bytes_);
    capacities_[c.id] = c.size * sizeof(float);
    area_bytes_ += (capacities_[c.id] + kAlign - 1) / kAlign * kAlign;
  }
}

}  // namespace monsoon
