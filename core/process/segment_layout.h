// The shared segment (core/process/shared_segment.h) a server makes for one client on its host:
// a page of doorbells, then one call block per slot, then the slots. Every slot is big enough
// for any chunk's payload (its float32 values, or fewer bytes for an encoded gradient). A call
// names the slots it uses: any free slot serves any chunk, so a segment's size follows the
// calls in flight, not the model.
//
// A call whose payloads all lie in the segment may also travel through it instead of gRPC: the
// client writes its request frame into the call block of a slot it holds, publishes the block
// (state kRequest, release) and rings the server's bell; the server answers in the same block
// (state kReply) and rings the client's. A block is published only once it is whole, so a
// request a killed client left half-written is never served.
#ifndef MONSOON_CORE_PROCESS_SEGMENT_LAYOUT_H_
#define MONSOON_CORE_PROCESS_SEGMENT_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/sharding_plan.h"

namespace monsoon {

// The most slots a server gives one client: a request and a reply for each of 64 push calls in
// flight (transport.max_in_flight's largest) and a reply for each of 64 pulls.
inline constexpr size_t kMaxSegmentSlots = 3 * 64;
inline constexpr size_t kSegmentPage = 4096;

// The segment's first page. Each bell is a counter and a futex word: the ringer increments it
// and wakes the waiters; a waiter reads it before it looks for work and sleeps only while it
// still holds that value.
struct SegmentBells {
  std::atomic<uint32_t> to_server;              // a request was posted
  alignas(64) std::atomic<uint32_t> to_client;  // a request was answered, or closed was set
  // Set (then to_client rung) once the server takes no more calls through the segment.
  std::atomic<uint32_t> closed;
};

// The calls that can travel through a segment.
enum class SegmentMethod : uint32_t { kPull = 1, kPush = 2, kExchange = 3 };

// A slot's call block. The client may write it only while it is kIdle and it holds the slot;
// the server only between taking a kRequest (which makes it kServing) and publishing kReply.
struct SlotCall {
  enum State : uint32_t { kIdle = 0, kRequest = 1, kServing = 2, kReply = 3 };
  std::atomic<uint32_t> state;
  uint32_t method;           // a SegmentMethod
  uint32_t code;             // the reply's absl::StatusCode; the frame is its message when not OK
  uint32_t frame_bytes;      // of the request's frame, then of the reply's
  int64_t deadline_unix_ns;  // the request's
  uint8_t frame[kSegmentPage - 24];
};
static_assert(sizeof(SlotCall) == kSegmentPage, "a call block is one page");

struct SegmentLayout {
  size_t slots = 0;
  size_t slot_bytes = 0;

  // `slots` slots for `plan`'s chunks: its largest chunk's bytes, rounded up to 64.
  static SegmentLayout For(const ShardingPlan& plan, size_t slots);
  // The layout of a segment of `bytes` bytes with slots of `slot_bytes` (0 slots when it is
  // too short for one).
  static SegmentLayout OfSize(size_t bytes, size_t slot_bytes);
  // What a client with `max_in_flight` calls per server asks server `server` for: enough for
  // a push (request and reply) and a pull in flight on each of those calls, but no more than
  // that server's chunks need, nor kMaxSegmentSlots.
  static size_t SlotsWanted(const ShardingPlan& plan, int server, int max_in_flight);

  size_t bytes() const { return kSegmentPage * (1 + slots) + slots * slot_bytes; }
  // Where slot `slot`'s payload starts.
  size_t Offset(size_t slot) const { return kSegmentPage * (1 + slots) + slot * slot_bytes; }

  static SegmentBells* Bells(uint8_t* segment) { return reinterpret_cast<SegmentBells*>(segment); }
  static SlotCall* Call(uint8_t* segment, size_t slot) {
    return reinterpret_cast<SlotCall*>(segment + kSegmentPage * (1 + slot));
  }
};

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_SEGMENT_LAYOUT_H_
