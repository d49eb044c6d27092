#include "proto/segment_call.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

// Copies `frame` into the call block's frame; InvalidArgument when it does not fit.
absl::Status WriteFrame(const grpc::ByteBuffer& frame, SlotCall* call) {
  if (frame.Length() > sizeof(call->frame)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a frame of ", frame.Length(), " bytes in a call block of ", sizeof(call->frame)));
  }
  std::vector<grpc::Slice> slices;
  if (!frame.Dump(&slices).ok()) return absl::InternalError("unreadable frame");
  size_t at = 0;
  for (const grpc::Slice& slice : slices) {
    std::memcpy(call->frame + at, slice.begin(), slice.size());
    at += slice.size();
  }
  call->frame_bytes = static_cast<uint32_t>(at);
  return absl::OkStatus();
}

grpc::ByteBuffer ReadFrame(const SlotCall& call) {
  grpc::Slice slice(call.frame, std::min<size_t>(call.frame_bytes, sizeof(call.frame)));
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

absl::Status PostRequest(const SegmentRequest& request, SlotCall* call) {
  if (const absl::Status written = WriteFrame(request.frame, call); !written.ok()) return written;
  call->method = static_cast<uint32_t>(request.method);
  call->deadline_unix_ns = absl::ToUnixNanos(request.deadline);
  call->state.store(SlotCall::kRequest, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<SegmentRequest> ReadRequest(const SlotCall& call) {
  SegmentRequest request;
  request.method = static_cast<SegmentMethod>(call.method);
  if (request.method != SegmentMethod::kPull && request.method != SegmentMethod::kPush &&
      request.method != SegmentMethod::kExchange) {
    return absl::InvalidArgumentError(absl::StrCat("no segment method ", call.method));
  }
  request.frame = ReadFrame(call);
  request.deadline = absl::FromUnixNanos(call.deadline_unix_ns);
  return request;
}

void PostAnswer(const absl::StatusOr<grpc::ByteBuffer>& answer, SlotCall* call) {
  absl::Status status = answer.status();
  if (status.ok()) {
    status = WriteFrame(*answer, call);
    if (!status.ok()) status = absl::InternalError(absl::StrCat("reply: ", status.message()));
  }
  call->code = static_cast<uint32_t>(status.code());
  if (!status.ok()) {
    const size_t bytes = std::min(status.message().size(), sizeof(call->frame));
    std::memcpy(call->frame, status.message().data(), bytes);
    call->frame_bytes = static_cast<uint32_t>(bytes);
  }
  call->state.store(SlotCall::kReply, std::memory_order_release);
}

absl::StatusOr<grpc::ByteBuffer> TakeAnswer(SlotCall* call) {
  absl::StatusOr<grpc::ByteBuffer> answer;
  const size_t bytes = std::min<size_t>(call->frame_bytes, sizeof(call->frame));
  if (call->code == 0) {
    answer = ReadFrame(*call);
  } else {
    answer = absl::Status(static_cast<absl::StatusCode>(call->code),
                          std::string(reinterpret_cast<const char*>(call->frame), bytes));
  }
  call->state.store(SlotCall::kIdle, std::memory_order_release);
  return answer;
}

}  // namespace monsoon
