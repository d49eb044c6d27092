// Frames: the body of every Monsoon RPC, a small protobuf header followed by raw float32
// payload bytes: [u32 little-endian header length][header][payload]. Payloads are never
// protobuf fields, so a tensor is not copied into or out of a protobuf message.
#ifndef MONSOON_PROTO_FRAME_H_
#define MONSOON_PROTO_FRAME_H_

#include <grpc/slice.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"

namespace monsoon {

// Metadata key carrying the per-job secret token on every RPC.
inline constexpr char kTokenMetadataKey[] = "x-monsoon-token";

// A payload slice that *borrows* `floats` (no copy): the caller keeps them alive and
// unchanged until the RPC carrying the frame has completed.
grpc::Slice BorrowFloats(absl::Span<const float> floats);

// A payload slice over shared floats (no copy): it holds a reference to them until gRPC has
// sent them. Nobody may change them meanwhile (see ChunkSnapshot).
grpc::Slice ShareFloats(std::shared_ptr<const std::vector<float>> floats);

// A payload slice that owns fresh memory for n floats, returned through *data for filling.
grpc::Slice AllocateFloats(size_t n, float** data);
// The same for n values of another 2- or 4-byte type (encoded gradients). The memory is on the
// heap even for a few bytes, which a plain grpc::Slice would hold inline: *data then stays
// valid once the slice is moved.
template <typename T>
grpc::Slice AllocatePayload(size_t n, T** data) {
  grpc::Slice slice(grpc_slice_malloc_large(n * sizeof(T)), grpc::Slice::STEAL_REF);
  *data = reinterpret_cast<T*>(const_cast<uint8_t*>(slice.begin()));
  return slice;
}

// The frame [u32 header length][header][payload]; an empty payload slice means none.
grpc::ByteBuffer EncodeFrame(const google::protobuf::MessageLite& header,
                             grpc::Slice payload = grpc::Slice());

// A received frame: the header is parsed at once, the payload stays in gRPC's slices until
// CopyPayloadTo writes it straight into its destination.
class ReceivedFrame {
 public:
  // InvalidArgument when the buffer is not a well-formed frame for `header`'s type.
  static absl::StatusOr<ReceivedFrame> Parse(const grpc::ByteBuffer& buffer,
                                             google::protobuf::MessageLite* header);

  size_t payload_bytes() const { return payload_bytes_; }
  // InvalidArgument unless dest holds exactly payload_bytes().
  absl::Status CopyPayloadTo(absl::Span<float> dest) const;
  absl::Status CopyPayloadTo(absl::Span<uint16_t> dest) const;
  absl::Status CopyPayloadTo(absl::Span<uint32_t> dest) const;

 private:
  absl::Status CopyPayloadBytes(void* dest, size_t bytes) const;

  std::vector<grpc::Slice> slices_;
  size_t payload_offset_ = 0;  // into the concatenation of slices_
  size_t payload_bytes_ = 0;
};

// A call's payload wherever it lies: in a received frame's slices, or in one piece of memory
// (a slot of a shared segment, core/process/segment_layout.h).
class PayloadView {
 public:
  explicit PayloadView(const ReceivedFrame& frame) : frame_(&frame) {}
  PayloadView(const uint8_t* data, size_t bytes) : data_(data), bytes_(bytes) {}

  size_t bytes() const { return frame_ != nullptr ? frame_->payload_bytes() : bytes_; }
  // InvalidArgument unless dest holds exactly bytes().
  template <typename T>
  absl::Status CopyTo(absl::Span<T> dest) const {
    if (frame_ != nullptr) return frame_->CopyPayloadTo(dest);
    return CopyMemory(dest.data(), dest.size() * sizeof(T));
  }
  // The payload as n floats (bytes() must be 4 n): where it lies when that is memory aligned for
  // them (no copy), else copied into *scratch. The span lives as long as both.
  absl::StatusOr<absl::Span<const float>> Floats(size_t n, std::vector<float>* scratch) const;

 private:
  absl::Status CopyMemory(void* dest, size_t bytes) const;

  const ReceivedFrame* frame_ = nullptr;
  const uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_PROTO_FRAME_H_
