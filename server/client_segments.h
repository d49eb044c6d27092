// The shared segments a server makes for the clients on its own host: one per client (role,
// index), a pool of slots (core/process/segment_layout.h). A client's new Hello replaces its
// segment (a restarted worker gets a fresh one); calls still holding the old one keep it mapped
// until they end. A segment lives while the server or its client maps it: nothing is left
// after a crash. Each segment has a thread that takes the calls its client posts in it and
// hands them to the server's handler.
#ifndef MONSOON_SERVER_CLIENT_SEGMENTS_H_
#define MONSOON_SERVER_CLIENT_SEGMENTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/process/segment_layout.h"
#include "core/process/shared_segment.h"
#include "core/role.h"
#include "core/sharding_plan.h"
#include "proto/frame.h"
#include "proto/segment_call.h"

namespace monsoon {

// Answers one call that came through a segment, exactly once, on any thread.
using SegmentAnswer = std::function<void(const absl::StatusOr<grpc::ByteBuffer>&)>;
// Serves one call that came through `segment` (its client's): sends its answer through
// `answer`, now or later, never blocking the thread that called.
using SegmentHandler = std::function<void(
    SegmentRequest request, const std::shared_ptr<SharedSegment>& segment, SegmentAnswer answer)>;

class ClientSegments {
 public:
  // What a Hello's reply offers: the segment's descriptor in this process, its id and layout.
  struct Offer {
    uint64_t id = 0;  // 0: none
    int fd = -1;
    SegmentLayout layout;
  };

  // Serves the calls that come through the segments with `handler`.
  ClientSegments(const ShardingPlan& plan, int server, SegmentHandler handler);
  ~ClientSegments();

  // Stops every segment's thread and drops the segments (a call a handler has yet to answer
  // keeps its own); later Hellos get none.
  void Close();

  // A fresh segment of `slots` slots (at most what this server's chunks can use) for the
  // client when `client_host` is this host's identity; none (id 0) for another host, for no
  // slots, or when no segment can be made (the client then uses the frames).
  Offer OfferTo(RoleKind role, int index, const std::string& client_host, size_t slots);
  // The client's segment named `id`; FailedPrecondition when it has none by that id (never
  // offered, or replaced by a later Hello).
  absl::StatusOr<std::shared_ptr<SharedSegment>> Find(RoleKind role, int index, uint64_t id);

  // A request's payload of `bytes` in slot `slot`; InvalidArgument for a slot the segment does
  // not have or more bytes than a slot holds.
  absl::StatusOr<PayloadView> RequestPayload(const SharedSegment& segment, uint32_t slot,
                                             uint64_t bytes) const;
  // Slot `slot` as `floats` values, for a reply (InvalidArgument as above).
  absl::StatusOr<absl::Span<float>> ReplySlot(const SharedSegment& segment, uint32_t slot,
                                              size_t floats) const;

 private:
  class CallTaker;  // a segment's thread
  struct Held {
    uint64_t id = 0;
    std::shared_ptr<SharedSegment> segment;
    std::unique_ptr<CallTaker> taker;
  };

  // The layout of a segment of this server's (its size says how many slots).
  SegmentLayout LayoutOf(const SharedSegment& segment) const;
  absl::Status CheckSlot(const SharedSegment& segment, uint32_t slot, uint64_t bytes) const;

  const ShardingPlan& plan_;  // the server's
  const int server_;
  const std::string host_;
  const SegmentHandler handler_;
  absl::Mutex mu_;
  std::map<std::pair<RoleKind, int>, Held> segments_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_CLIENT_SEGMENTS_H_
