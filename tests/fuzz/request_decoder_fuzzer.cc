// libFuzzer target for the server's request decoders: every byte string is tried as the body
// of each RPC (frame parsing into each request header), and as a push whose gradient is then
// decoded. Any crash, sanitizer report or leak is a bug; a clean error status is the expected
// outcome for malformed input.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "proto/frame.h"
#include "proto/monsoon.pb.h"
#include "server/push_decoder.h"

namespace {

// The largest chunk the fuzzed server accepts (a 16 KiB chunk: small, so sizes near it get
// explored).
constexpr size_t kMaxChunkFloats = 4096;

// The input split into up to three slices, as gRPC may hand a message over in pieces.
grpc::ByteBuffer AsByteBuffer(const uint8_t* data, size_t size) {
  std::vector<grpc::Slice> slices;
  const size_t cut1 = size / 3, cut2 = 2 * size / 3;
  for (auto [begin, end] : {std::pair{size_t{0}, cut1}, {cut1, cut2}, {cut2, size}}) {
    if (end > begin) slices.emplace_back(data + begin, end - begin);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

template <typename Header>
void ParseAs(const grpc::ByteBuffer& buffer) {
  Header header;
  monsoon::ReceivedFrame::Parse(buffer, &header).status().IgnoreError();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const grpc::ByteBuffer buffer = AsByteBuffer(data, size);
  ParseAs<monsoon::wire::HelloRequest>(buffer);
  ParseAs<monsoon::wire::PullRequest>(buffer);
  ParseAs<monsoon::wire::HeartbeatRequest>(buffer);
  ParseAs<monsoon::wire::FinishRequest>(buffer);
  monsoon::wire::ExchangeRequest exchange;
  auto exchange_frame = monsoon::ReceivedFrame::Parse(buffer, &exchange);
  if (exchange_frame.ok() && exchange_frame->payload_bytes() % sizeof(float) == 0 &&
      exchange_frame->payload_bytes() <= kMaxChunkFloats * sizeof(float)) {
    std::vector<float> weights(exchange_frame->payload_bytes() / sizeof(float));
    exchange_frame->CopyPayloadTo(absl::MakeSpan(weights)).IgnoreError();
  }
  monsoon::wire::PushRequest push;
  auto frame = monsoon::ReceivedFrame::Parse(buffer, &push);
  if (frame.ok()) {
    std::vector<float> gradient;
    monsoon::DecodeGradient(push, monsoon::PayloadView(*frame), kMaxChunkFloats, &gradient)
        .IgnoreError();
    // The same header with the payload in a shared segment's slot: the whole input.
    monsoon::DecodeGradient(push, monsoon::PayloadView(data, size), kMaxChunkFloats, &gradient)
        .IgnoreError();
  }
  return 0;
}
