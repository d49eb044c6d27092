// The client's side of the segment a server on its host shares with it
// (proto/segment_layout.h). A call claims the slots it uses before it starts and releases
// them once the server has answered it. A slot whose call ended without an answer stays
// claimed for good, since the server may still read or write it: that chunk's payloads go
// in frames from then on.
#ifndef MONSOON_WORKER_SEGMENT_SLOTS_H_
#define MONSOON_WORKER_SEGMENT_SLOTS_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/process/shared_segment.h"
#include "core/sharding_plan.h"
#include "proto/segment_layout.h"

namespace monsoon {

class SegmentSlots {
 public:
  // `memory` must be layout.bytes() long for server `server` of `plan`.
  SegmentSlots(std::unique_ptr<SharedSegment> memory, uint64_t id, const ShardingPlan& plan,
               int server);

  uint64_t id() const { return id_; }
  // The slot's memory, claimed now, when it was free; nullptr while a call holds it.
  // Thread-safe.
  uint8_t* Claim(SegmentArea area, int chunk_id);
  // Frees a claimed slot once the server has answered the call that claimed it.
  void Release(SegmentArea area, int chunk_id);
  const uint8_t* At(SegmentArea area, int chunk_id) const {
    return memory_->data() + layout_.Offset(area, chunk_id);
  }

 private:
  size_t Index(SegmentArea area, int chunk_id) const {
    return static_cast<size_t>(area) * num_chunks_ + static_cast<size_t>(chunk_id);
  }

  const std::unique_ptr<SharedSegment> memory_;
  const uint64_t id_;
  const SegmentLayout layout_;
  const int num_chunks_;
  const std::unique_ptr<std::atomic<bool>[]> busy_;  // by Index()
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_SEGMENT_SLOTS_H_
