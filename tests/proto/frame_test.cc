#include "proto/frame.h"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "proto/monsoon.pb.h"

namespace monsoon {
namespace {

TEST_CASE("Frame: header and payload round-trip; the payload lands in the destination",
          "[proto][frame]") {
  wire::PushRequest header;
  header.mutable_update()->set_chunk_id(7);
  header.mutable_update()->set_num_floats(5);
  const std::vector<float> payload = {1.5f, -2.0f, 3.25f, 0.0f, 1e-7f};
  const grpc::ByteBuffer buffer = EncodeFrame(header, BorrowFloats(payload));
  wire::PushRequest parsed;
  auto frame = ReceivedFrame::Parse(buffer, &parsed);
  REQUIRE(frame.ok());
  CHECK(parsed.update().chunk_id() == 7);
  CHECK(frame->payload_bytes() == 20);
  std::vector<float> dest(5);
  REQUIRE(frame->CopyPayloadTo(absl::MakeSpan(dest)).ok());
  CHECK(dest == payload);
  std::vector<float> wrong(4);
  CHECK(absl::IsInvalidArgument(frame->CopyPayloadTo(absl::MakeSpan(wrong))));
}

TEST_CASE("Frame: a payload allocated for filling keeps what was written, however small",
          "[proto][frame]") {
  // As the server fills an exchange's reply: the slice is assigned, then written through the
  // pointer. Two floats fit inside a slice's own struct, where the pointer would not follow it.
  for (const size_t n : {size_t{2}, size_t{5}, size_t{1000}}) {
    grpc::Slice payload;
    float* data = nullptr;
    payload = AllocateFloats(n, &data);
    for (size_t i = 0; i < n; ++i) data[i] = 0.5f + static_cast<float>(i);
    wire::ExchangeResponse header;
    auto frame = ReceivedFrame::Parse(EncodeFrame(header, std::move(payload)), &header);
    REQUIRE(frame.ok());
    std::vector<float> dest(n);
    REQUIRE(frame->CopyPayloadTo(absl::MakeSpan(dest)).ok());
    for (size_t i = 0; i < n; ++i) CHECK(dest[i] == 0.5f + static_cast<float>(i));
  }
}

TEST_CASE("Frame: a shared payload is sent without a copy and held until the frame is gone",
          "[proto][frame]") {
  auto floats = std::make_shared<const std::vector<float>>(std::vector<float>{4.0f, -1.0f, 0.5f});
  std::weak_ptr<const std::vector<float>> watch = floats;
  wire::PullResponse header;
  header.set_num_floats(3);
  auto buffer = std::make_unique<grpc::ByteBuffer>(EncodeFrame(header, ShareFloats(floats)));
  std::vector<grpc::Slice> slices;
  REQUIRE(buffer->Dump(&slices).ok());
  REQUIRE(slices.size() == 2);
  CHECK(slices[1].begin() == reinterpret_cast<const uint8_t*>(floats->data()));
  slices.clear();
  floats.reset();
  REQUIRE(!watch.expired());  // the frame still holds the floats
  wire::PullResponse parsed;
  auto frame = ReceivedFrame::Parse(*buffer, &parsed);
  REQUIRE(frame.ok());
  std::vector<float> dest(3);
  REQUIRE(frame->CopyPayloadTo(absl::MakeSpan(dest)).ok());
  CHECK(dest == std::vector<float>{4.0f, -1.0f, 0.5f});
  frame = absl::InternalError("released");
  buffer.reset();
  CHECK(watch.expired());
}

TEST_CASE("Frame: header-only frames and frames split across many slices", "[proto][frame]") {
  wire::PullRequest header;
  header.set_chunk_id(3);
  const grpc::ByteBuffer encoded = EncodeFrame(header);
  std::vector<grpc::Slice> slices;
  REQUIRE(encoded.Dump(&slices).ok());
  // Re-slice the bytes one at a time to exercise parsing across slice boundaries.
  std::vector<grpc::Slice> bytes;
  for (const grpc::Slice& s : slices) {
    for (size_t i = 0; i < s.size(); ++i) bytes.emplace_back(s.begin() + i, 1);
  }
  const grpc::ByteBuffer split(bytes.data(), bytes.size());
  wire::PullRequest parsed;
  auto frame = ReceivedFrame::Parse(split, &parsed);
  REQUIRE(frame.ok());
  CHECK(parsed.chunk_id() == 3);
  CHECK(frame->payload_bytes() == 0);
}

TEST_CASE("Frame: truncated or lying frames are InvalidArgument", "[proto][frame]") {
  wire::PullRequest header;
  grpc::Slice tiny("ab", 2);
  CHECK(
      absl::IsInvalidArgument(ReceivedFrame::Parse(grpc::ByteBuffer(&tiny, 1), &header).status()));
  const char lying[] = {100, 0, 0, 0, 1, 2};  // claims a 100-byte header
  grpc::Slice s(lying, sizeof(lying));
  CHECK(absl::IsInvalidArgument(ReceivedFrame::Parse(grpc::ByteBuffer(&s, 1), &header).status()));
  const char garbage[] = {3, 0, 0, 0, '\xff', '\xff', '\xff'};
  grpc::Slice g(garbage, sizeof(garbage));
  CHECK(absl::IsInvalidArgument(ReceivedFrame::Parse(grpc::ByteBuffer(&g, 1), &header).status()));
}

}  // namespace
}  // namespace monsoon
