// The frames of calls that travel through a shared segment instead of gRPC
// (core/process/segment_layout.h): the client writes a request into a slot's call block and
// publishes it; the server answers in the same block. The frames are those gRPC would carry
// (proto/frame.h), without payloads: a call travels this way only when its payloads lie in
// the segment's slots.
#ifndef MONSOON_PROTO_SEGMENT_CALL_H_
#define MONSOON_PROTO_SEGMENT_CALL_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/process/segment_layout.h"

namespace monsoon {

// A request as the server reads it.
struct SegmentRequest {
  SegmentMethod method = SegmentMethod::kPull;
  grpc::ByteBuffer frame;
  absl::Time deadline;
};

// Writes a request into `call` (kIdle, held by the caller) and publishes it; the caller then
// rings the server's bell. InvalidArgument, leaving `call` kIdle, when the frame does not fit
// a call block.
absl::Status PostRequest(const SegmentRequest& request, SlotCall* call);
// A published request's copy, read by the server once it took the block (kServing). A method
// it does not know is InvalidArgument.
absl::StatusOr<SegmentRequest> ReadRequest(const SlotCall& call);
// Writes the answer (a reply frame, or an error) into `call` and publishes it (kReply); the
// caller then rings the client's bell. A reply frame too large for a call block becomes an
// Internal error.
void PostAnswer(const absl::StatusOr<grpc::ByteBuffer>& answer, SlotCall* call);
// A published answer's copy, read by the client; its block is kIdle again afterwards.
absl::StatusOr<grpc::ByteBuffer> TakeAnswer(SlotCall* call);

}  // namespace monsoon

#endif  // MONSOON_PROTO_SEGMENT_CALL_H_
