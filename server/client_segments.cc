#include "server/client_segments.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "glog/logging.h"

namespace monsoon {

ClientSegments::Offer ClientSegments::OfferTo(RoleKind role, int index,
                                              const std::string& client_host) {
  if (host_.empty() || client_host != host_) return {};
  absl::StatusOr<std::unique_ptr<SharedSegment>> made = SharedSegment::Create(layout_.bytes());
  if (!made.ok()) {
    LOG(WARNING) << "no shared segment for " << RoleId{role, index}.Describe() << ": "
                 << made.status().message() << "; its payloads go through gRPC";
    return {};
  }
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  std::shared_ptr<SharedSegment> segment = *std::move(made);
  Offer offer{id, segment->fd(), segment->size()};
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

absl::Status ClientSegments::CheckSlot(int chunk_id, uint64_t bytes) const {
  if (!layout_.Holds(chunk_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", chunk_id, " has no slot in this server's segments"));
  }
  if (bytes > layout_.Capacity(chunk_id)) {
    return absl::InvalidArgumentError(absl::StrCat("a payload of ", bytes, " bytes in chunk ",
                                                   chunk_id, "'s slot of ",
                                                   layout_.Capacity(chunk_id)));
  }
  return absl::OkStatus();
}

absl::StatusOr<PayloadView> ClientSegments::RequestPayload(const SharedSegment& segment,
                                                           int chunk_id, uint64_t bytes) const {
  MONSOON_RETURN_IF_ERROR(CheckSlot(chunk_id, bytes));
  return PayloadView(segment.data() + layout_.Offset(SegmentArea::kRequest, chunk_id), bytes);
}

absl::StatusOr<absl::Span<float>> ClientSegments::ReplySlot(const SharedSegment& segment,
                                                            SegmentArea area, int chunk_id,
                                                            size_t floats) const {
  MONSOON_RETURN_IF_ERROR(CheckSlot(chunk_id, floats * sizeof(float)));
  return absl::MakeSpan(reinterpret_cast<float*>(segment.data() + layout_.Offset(area, chunk_id)),
                        floats);
}

}  // namespace monsoon
