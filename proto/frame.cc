#include "proto/frame.h"

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

grpc::Slice HeaderSlice(const google::protobuf::MessageLite& header) {
  const size_t len = header.ByteSizeLong();
  grpc::Slice slice(4 + len);
  auto* p = const_cast<uint8_t*>(slice.begin());
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(len >> (8 * i));
  header.SerializeWithCachedSizesToArray(p + 4);
  return slice;
}

// Copies `len` bytes starting at `offset` of the slices' concatenation into dest.
void Gather(const std::vector<grpc::Slice>& slices, size_t offset, size_t len, uint8_t* dest) {
  for (const grpc::Slice& s : slices) {
    if (len == 0) return;
    if (offset >= s.size()) {
      offset -= s.size();
      continue;
    }
    const size_t n = std::min(len, s.size() - offset);
    std::memcpy(dest, s.begin() + offset, n);
    dest += n;
    len -= n;
    offset = 0;
  }
}

}  // namespace

grpc::Slice BorrowFloats(absl::Span<const float> floats) {
  return grpc::Slice(const_cast<float*>(floats.data()), floats.size() * sizeof(float),
                     grpc::Slice::STATIC_SLICE);
}

grpc::Slice ShareFloats(std::shared_ptr<const std::vector<float>> floats) {
  using Reference = std::shared_ptr<const std::vector<float>>;
  void* data = const_cast<float*>(floats->data());
  const size_t bytes = floats->size() * sizeof(float);
  return grpc::Slice(
      data, bytes, [](void* reference) { delete static_cast<Reference*>(reference); },
      new Reference(std::move(floats)));
}

grpc::Slice AllocateFloats(size_t n, float** data) { return AllocatePayload(n, data); }

grpc::ByteBuffer EncodeFrame(const google::protobuf::MessageLite& header, grpc::Slice payload) {
  grpc::Slice slices[2] = {HeaderSlice(header), std::move(payload)};
  return grpc::ByteBuffer(slices, slices[1].size() == 0 ? 1 : 2);
}

absl::StatusOr<ReceivedFrame> ReceivedFrame::Parse(const grpc::ByteBuffer& buffer,
                                                   google::protobuf::MessageLite* header) {
  ReceivedFrame frame;
  if (!buffer.Dump(&frame.slices_).ok()) return absl::InvalidArgumentError("unreadable frame");
  size_t total = 0;
  for (const grpc::Slice& s : frame.slices_) total += s.size();
  if (total < 4) return absl::InvalidArgumentError(absl::StrCat("frame of ", total, " bytes"));
  uint8_t len_bytes[4];
  Gather(frame.slices_, 0, 4, len_bytes);
  const size_t header_len = len_bytes[0] | (len_bytes[1] << 8) | (len_bytes[2] << 16) |
                            (static_cast<size_t>(len_bytes[3]) << 24);
  if (header_len > total - 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame header of ", header_len, " bytes in a ", total, "-byte frame"));
  }
  std::string header_bytes(header_len, '\0');
  Gather(frame.slices_, 4, header_len, reinterpret_cast<uint8_t*>(header_bytes.data()));
  if (!header->ParseFromString(header_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", header->GetTypeName(), " frame header"));
  }
  frame.payload_offset_ = 4 + header_len;
  frame.payload_bytes_ = total - frame.payload_offset_;
  return frame;
}

absl::Status ReceivedFrame::CopyPayloadBytes(void* dest, size_t bytes) const {
  if (bytes != payload_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload of ", payload_bytes_, " bytes where ", bytes, " were expected"));
  }
  Gather(slices_, payload_offset_, payload_bytes_, static_cast<uint8_t*>(dest));
  return absl::OkStatus();
}

absl::Status ReceivedFrame::CopyPayloadTo(absl::Span<float> dest) const {
  return CopyPayloadBytes(dest.data(), dest.size() * sizeof(float));
}

absl::Status ReceivedFrame::CopyPayloadTo(absl::Span<uint16_t> dest) const {
  return CopyPayloadBytes(dest.data(), dest.size() * sizeof(uint16_t));
}

absl::Status ReceivedFrame::CopyPayloadTo(absl::Span<uint32_t> dest) const {
  return CopyPayloadBytes(dest.data(), dest.size() * sizeof(uint32_t));
}

absl::StatusOr<absl::Span<const float>> PayloadView::Floats(size_t n,
                                                           std::vector<float>* scratch) const {
  if (frame_ == nullptr && n * sizeof(float) == bytes_ &&
      reinterpret_cast<uintptr_t>(data_) % alignof(float) == 0) {
    return absl::MakeConstSpan(reinterpret_cast<const float*>(data_), n);
  }
  scratch->resize(n);
  if (absl::Status copied = CopyTo(absl::MakeSpan(*scratch)); !copied.ok()) return copied;
  return absl::MakeConstSpan(*scratch);
}

absl::Status PayloadView::CopyMemory(void* dest, size_t bytes) const {
  if (bytes != bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload of ", bytes_, " bytes where ", bytes, " were expected"));
  }
  std::memcpy(dest, data_, bytes);
  return absl::OkStatus();
}

}  // namespace monsoon
