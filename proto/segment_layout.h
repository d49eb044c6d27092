// Where chunk payloads lie in the shared segment a server makes for one client on its host
// (core/process/shared_segment.h): three areas, each with a slot for every chunk of that
// server at a fixed place computed from the sharding plan alone (both sides hold the same
// plan: Hello checks its fingerprint). A slot holds a chunk's float32 values, or fewer bytes
// for an encoded gradient.
#ifndef MONSOON_PROTO_SEGMENT_LAYOUT_H_
#define MONSOON_PROTO_SEGMENT_LAYOUT_H_

#include <cstddef>
#include <vector>

#include "core/sharding_plan.h"

namespace monsoon {

enum class SegmentArea {
  kRequest = 0,      // a push's gradient, an exchange's weights
  kUpdateReply = 1,  // the weights after a push (pull_after), an exchange's difference
  kPullReply = 2,    // a pull's weights
};
inline constexpr int kSegmentAreas = 3;

class SegmentLayout {
 public:
  SegmentLayout(const ShardingPlan& plan, int server);

  size_t bytes() const { return kSegmentAreas * area_bytes_; }
  // False for a chunk of another server (or no chunk at all).
  bool Holds(int chunk_id) const {
    return chunk_id >= 0 && chunk_id < static_cast<int>(offsets_.size()) && offsets_[chunk_id] >= 0;
  }
  // The first byte of the chunk's slot in `area` (Holds(chunk_id) required); the slot is
  // capacity(chunk_id) bytes, 64-byte aligned.
  size_t Offset(SegmentArea area, int chunk_id) const {
    return static_cast<size_t>(area) * area_bytes_ + static_cast<size_t>(offsets_[chunk_id]);
  }
  size_t Capacity(int chunk_id) const { return capacities_[chunk_id]; }

 private:
  std::vector<long long> offsets_;  // by chunk id; -1 for other servers' chunks
  std::vector<size_t> capacities_;  // by chunk id
  size_t area_bytes_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_PROTO_SEGMENT_LAYOUT_H_
