#include "server/client_segments.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/process/futex.h"
#include "core/status_macros.h"
#include "glog/logging.h"

namespace monsoon {

// Takes the calls a client posts in its segment, in slot order, and hands them to the handler;
// stops when destroyed.
class ClientSegments::CallTaker {
 public:
  CallTaker(std::shared_ptr<SharedSegment> segment, size_t slots, const SegmentHandler& handler)
      : segment_(std::move(segment)),
        slots_(slots),
        handler_(handler),
        thread_([this] { Loop(); }) {}
  // Tells the client, too, that calls through the segment are over.
  ~CallTaker() {
    SegmentBells* bells = SegmentLayout::Bells(segment_->data());
    stopping_.store(true);
    Ring(bells->to_server);
    thread_.join();
    bells->closed.store(1, std::memory_order_release);
    Ring(bells->to_client);
  }

 private:
  void Loop() {
    std::atomic<uint32_t>& bell = SegmentLayout::Bells(segment_->data())->to_server;
    while (!stopping_.load()) {
      const uint32_t seen = bell.load(std::memory_order_acquire);
      bool took = false;
      for (size_t slot = 0; slot < slots_; ++slot) took |= TakeIfPosted(slot);
      // The bell wakes it; the timeout only bounds the cost of a wake-up lost to a bug.
      if (!took) FutexWait(bell, seen, absl::Seconds(1));
    }
  }

  // Serves the call posted in `slot`, if any; whether there was one.
  bool TakeIfPosted(size_t slot) {
    SlotCall* call = SegmentLayout::Call(segment_->data(), slot);
    if (call->state.load(std::memory_order_acquire) != SlotCall::kRequest) return false;
    call->state.store(SlotCall::kServing, std::memory_order_relaxed);
    SegmentAnswer answer = [segment = segment_, slot](const absl::StatusOr<grpc::ByteBuffer>& a) {
      PostAnswer(a, SegmentLayout::Call(segment->data(), slot));
      Ring(SegmentLayout::Bells(segment->data())->to_client);
    };
    absl::StatusOr<SegmentRequest> request = ReadRequest(*call);
    if (!request.ok()) {
      answer(request.status());
    } else {
      handler_(*std::move(request), segment_, std::move(answer));
    }
    return true;
  }

  const std::shared_ptr<SharedSegment> segment_;
  const size_t slots_;
  const SegmentHandler& handler_;  // the ClientSegments'
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: it starts once the rest is set
};

ClientSegments::ClientSegments(const ShardingPlan& plan, int server, SegmentHandler handler)
    : plan_(plan), server_(server), host_(LocalHostIdentity()), handler_(std::move(handler)) {}

ClientSegments::~ClientSegments() { Close(); }

void ClientSegments::Close() {
  std::map<std::pair<RoleKind, int>, Held> segments;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    segments.swap(segments_);
  }
  // `segments` stops its threads here, unlocked: a handler they run may look a segment up.
}

ClientSegments::Offer ClientSegments::OfferTo(RoleKind role, int index,
                                              const std::string& client_host, size_t slots) {
  slots = std::min(slots, SegmentLayout::SlotsWanted(plan_, server_, kMaxSegmentSlots / 3));
  if (host_.empty() || client_host != host_ || slots == 0) return {};
  const SegmentLayout layout = SegmentLayout::For(plan_, slots);
  absl::StatusOr<std::unique_ptr<SharedSegment>> made = SharedSegment::Create(layout.bytes());
  if (!made.ok()) {
    LOG(WARNING) << "no shared segment for " << RoleId{role, index}.Describe() << ": "
                 << made.status().message() << "; its payloads go through gRPC";
    return {};
  }
  Held held;
  held.segment = *std::move(made);
  held.taker = std::make_unique<CallTaker>(held.segment, layout.slots, handler_);
  Offer offer{0, held.segment->fd(), layout};
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return {};
    held.id = offer.id = next_id_++;
    std::swap(segments_[{role, index}], held);
  }
  return offer;  // `held`, now the segment replaced (if any), stops its thread unlocked
}

absl::StatusOr<std::shared_ptr<SharedSegment>> ClientSegments::Find(RoleKind role, int index,
                                                                     uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = segments_.find({role, index});
  if (it == segments_.end() || it->second.id != id) {
    return absl::FailedPreconditionError(
        absl::StrCat(RoleId{role, index}.Describe(), " named shared segment ", id,
                     ", which this server does not hold for it (a later Hello replaced it?)"));
  }
  return it->second.segment;
}

SegmentLayout ClientSegments::LayoutOf(const SharedSegment& segment) const {
  return SegmentLayout::OfSize(segment.size(), SegmentLayout::For(plan_, 0).slot_bytes);
}

absl::Status ClientSegments::CheckSlot(const SharedSegment& segment, uint32_t slot,
                                       uint64_t bytes) const {
  const SegmentLayout layout = LayoutOf(segment);
  if (slot >= layout.slots) {
    return absl::InvalidArgumentError(
        absl::StrCat("slot ", slot, " of a shared segment of ", layout.slots));
  }
  if (bytes > layout.slot_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a payload of ", bytes, " bytes in a slot of ", layout.slot_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<PayloadView> ClientSegments::RequestPayload(const SharedSegment& segment,
                                                           uint32_t slot, uint64_t bytes) const {
  MONSOON_RETURN_IF_ERROR(CheckSlot(segment, slot, bytes));
  return PayloadView(segment.data() + LayoutOf(segment).Offset(slot), bytes);
}

absl::StatusOr<absl::Span<float>> ClientSegments::ReplySlot(const SharedSegment& segment,
                                                            uint32_t slot, size_t floats) const {
  MONSOON_RETURN_IF_ERROR(CheckSlot(segment, slot, floats * sizeof(float)));
  return absl::MakeSpan(
      reinterpret_cast<float*>(segment.data() + LayoutOf(segment).Offset(slot)), floats);
}

}  // namespace monsoon
