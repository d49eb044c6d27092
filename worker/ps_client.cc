#include "worker/ps_client.h"

#include "absl/time/clock.h"

namespace monsoon {

uint64_t NewIncarnation() { return static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())); }

}  // namespace monsoon
