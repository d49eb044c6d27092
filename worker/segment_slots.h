// The client's side of the segment a server on its host shares with it: a pool of slots
// (core/process/segment_layout.h). A call claims the slots it uses before it starts and releases
// them once the server has answered it. A slot whose call ended without an answer is never
// released, since the server may still read or write it; when no slot is free, a call's
// payloads go in its frames.
#ifndef MONSOON_WORKER_SEGMENT_SLOTS_H_
#define MONSOON_WORKER_SEGMENT_SLOTS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/process/segment_layout.h"
#include "core/process/shared_segment.h"

namespace monsoon {

class SegmentSlots {
 public:
  // `memory` must be layout.bytes() long.
  SegmentSlots(std::unique_ptr<SharedSegment> memory, uint64_t id, const SegmentLayout& layout);

  uint64_t id() const { return id_; }
  // A free slot, claimed now; -1 when none is free. Thread-safe.
  int Claim();
  // Frees a claimed slot once the server has answered the call that claimed it.
  void Release(int slot);
  uint8_t* At(int slot) const { return memory_->data() + layout_.Offset(slot); }

 private:
  const std::unique_ptr<SharedSegment> memory_;
  const uint64_t id_;
  const SegmentLayout layout_;
  absl::Mutex mu_;
  std::vector<int> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_SEGMENT_SLOTS_H_
