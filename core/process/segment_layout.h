// The shared segment (core/process/shared_segment.h) a server makes for one client on its host
// is a pool of equal slots, each big enough for any chunk's payload (its float32 values, or
// fewer bytes for an encoded gradient). A call names the slots it uses: any free slot serves
// any chunk, so a segment's size follows the calls in flight, not the model.
#ifndef MONSOON_CORE_PROCESS_SEGMENT_LAYOUT_H_
#define MONSOON_CORE_PROCESS_SEGMENT_LAYOUT_H_

#include <cstddef>

#include "core/sharding_plan.h"

namespace monsoon {

// The most slots a server gives one client: a request and a reply for each of 64 push calls in
// flight (transport.max_in_flight's largest) and a reply for each of 64 pulls.
inline constexpr size_t kMaxSegmentSlots = 3 * 64;

struct SegmentLayout {
  size_t slots = 0;
  size_t slot_bytes = 0;

  // `slots` slots for `plan`'s chunks: its largest chunk's bytes, rounded up to 64.
  static SegmentLayout For(const ShardingPlan& plan, size_t slots);
  // What a client with `max_in_flight` calls per server asks server `server` for: enough for
  // a push (request and reply) and a pull in flight on each of those calls, but no more than
  // that server's chunks need, nor kMaxSegmentSlots.
  static size_t SlotsWanted(const ShardingPlan& plan, int server, int max_in_flight);

  size_t bytes() const { return slots * slot_bytes; }
  size_t Offset(size_t slot) const { return slot * slot_bytes; }
};

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_SEGMENT_LAYOUT_H_
