// Decoding a push's payload: the one place where untrusted gradient bytes are interpreted
// (fuzzed by tests/fuzz/request_decoder_fuzzer.cc).
#ifndef MONSOON_SERVER_PUSH_DECODER_H_
#define MONSOON_SERVER_PUSH_DECODER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/frame.h"
#include "proto/monsoon.pb.h"

namespace monsoon {

// The dense gradient a push carries, whatever its encoding (see wire::Encoding): float32
// values where they lie when the payload allows (PayloadView::FloatsInPlace), else decoded
// into *scratch. The payload's size must match the header, no chunk is larger than
// max_floats, and sparse indices must lie inside the chunk: InvalidArgument otherwise, before
// anything reaches the parameter server. The span lives as long as the payload and *scratch.
absl::StatusOr<absl::Span<const float>> DecodeGradient(const wire::PushRequest& request,
                                                       const PayloadView& payload,
                                                       size_t max_floats,
                                                       std::vector<float>* scratch);

}  // namespace monsoon

#endif  // MONSOON_SERVER_PUSH_DECODER_H_
