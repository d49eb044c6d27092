#include "server/client_segments.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "glog/logging.h"

namespace monsoon {

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
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  std::shared_ptr<SharedSegment> segment = *std::move(made);
  Offer offer{id, segment->fd(), layout};
  segments_[{role, index}] = {id, std::move(segment)};
  return offer;
}

absl::StatusOr<std::shared_ptr<SharedSegment>> ClientSegments::Find(RoleKind role, int index,
                                                                     uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = segments_.find({role, index});
  if (it == segments_.end() || it->second.first != id) {
    return absl::FailedPreconditionError(
        absl::StrCat(RoleId{role, index}.Describe(), " named shared segment ", id,
                     ", which this server does not hold for it (a later Hello replaced it?)"));
  }
  return it->second.second;
}

SegmentLayout ClientSegments::LayoutOf(const SharedSegment& segment) const {
  SegmentLayout layout = SegmentLayout::For(plan_, 0);
  layout.slots = segment.size() / layout.slot_bytes;
  return layout;
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
