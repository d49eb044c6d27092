// The worker's view of the parameter servers: pull the whole flat parameter vector, push a
// whole flat gradient; the client cuts both into the sharding plan's chunks. Implementations:
// GrpcPsClient (real RPCs) and InProcessPsClient (direct calls, for tests).
#ifndef MONSOON_WORKER_PS_CLIENT_H_
#define MONSOON_WORKER_PS_CLIENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/parameter_server.h"

namespace monsoon {

// Who a client speaks for (sent with Hello, pushes and Finish).
struct ClientIdentity {
  ClientRole role = ClientRole::kWorker;
  int index = 0;
};

struct TransferCounters {
  uint64_t bytes_sent = 0;      // payload bytes pushed
  uint64_t bytes_received = 0;  // payload bytes pulled
};

// One client is used by one thread at a time.
class PsClient {
 public:
  virtual ~PsClient() = default;
  // Overwrites `params` (plan.num_params() floats) with the servers' current values and
  // returns the smallest chunk version seen (the number of pushes every chunk has applied).
  virtual absl::StatusOr<uint64_t> PullAll(absl::Span<float> params) = 0;
  // Sends `gradient` (plan.num_params() floats), computed from weights of `base_version`.
  virtual absl::Status PushAll(absl::Span<const float> gradient, uint64_t base_version) = 0;
  // Tells every server this client is done.
  virtual absl::Status Finish() = 0;
  virtual absl::StatusOr<std::vector<ServerStats>> AllStats() = 0;
  virtual TransferCounters counters() const = 0;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_PS_CLIENT_H_
