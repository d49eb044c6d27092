// Decoding a push's payload: the one place where untrusted gradient bytes are interpreted
// (fuzzed by tests/fuzz/request_decoder_fuzzer.cc).
#ifndef MONSOON_SERVER_PUSH_DECODER_H_
#define MONSOON_SERVER_PUSH_DECODER_H_

#include <vector>

#include "absl/status/status.h"
#include "proto/frame.h"
#include "proto/monsoon.pb.h"

namespace monsoon {

// The dense gradient a push carries, whatever its encoding (see wire::Encoding), written to
// *gradient. The payload's size must match the header, no chunk is larger than max_floats,
// and sparse indices must lie inside the chunk: InvalidArgument otherwise, before anything
// reaches the parameter server.
absl::Status DecodeGradient(const wire::PushRequest& request, const ReceivedFrame& frame,
                            size_t max_floats, std::vector<float>* gradient);

}  // namespace monsoon

#endif  // MONSOON_SERVER_PUSH_DECODER_H_
