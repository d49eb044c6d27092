// A worker's calls to the servers, one at a time, run either on a thread of their own while the
// training loop computes on (transport.overlap), or at once on the loop's thread.
#ifndef MONSOON_WORKER_BACKGROUND_CALL_H_
#define MONSOON_WORKER_BACKGROUND_CALL_H_

#include "absl/status/statusor.h"
#include "core/background_task.h"
#include "worker/ps_client.h"

namespace monsoon {

// The threads of a worker's trace: the training loop, and the calls a BackgroundCall runs
// while the loop computes on (transport.overlap).
enum WorkerTraceThread { kTraceLoop = 0, kTraceOverlapped = 1 };

using BackgroundCall = BackgroundTask<absl::StatusOr<PushSummary>>;

}  // namespace monsoon

#endif  // MONSOON_WORKER_BACKGROUND_CALL_H_
