// One chunk a parameter server holds: its values (shared copy-on-write with the snapshots
// pulls send), optimizer state and version, the exactly-once ledger, a synchronous round,
// DC-ASGD's copies of what each worker pulled, and the pulls parked on it.
#ifndef MONSOON_SERVER_CHUNK_STATE_H_
#define MONSOON_SERVER_CHUNK_STATE_H_

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/sharding_plan.h"
#include "server/chunk_ledger.h"
#include "server/sync_round.h"
#include "server/wait_queue.h"

namespace monsoon {

// Everything but `meta` is guarded by `mu`.
struct ChunkState {
  Chunk meta;
  absl::Mutex mu;
  // Shared with the snapshots still held; changed only through Writable().
  std::shared_ptr<std::vector<float>> values ABSL_GUARDED_BY(mu);
  std::vector<float> optimizer_state ABSL_GUARDED_BY(mu);
  uint64_t version ABSL_GUARDED_BY(mu) = 0;
  ChunkLedger ledger ABSL_GUARDED_BY(mu);
  SyncRound round ABSL_GUARDED_BY(mu);  // sync jobs only
  // DC-ASGD: pulled[w] is the chunk as worker w last pulled it (empty without dc_lambda).
  std::vector<std::shared_ptr<const std::vector<float>>> pulled ABSL_GUARDED_BY(mu);
  WaitQueue waiters ABSL_GUARDED_BY(mu);
  // The version whose values the server's chunk window holds (kNotPublished: none yet).
  static constexpr uint64_t kNotPublished = ~uint64_t{0};
  uint64_t published_version ABSL_GUARDED_BY(mu) = kNotPublished;

  // The values for changing: first copied into a buffer of their own when a snapshot still
  // holds them (copy-on-write).
  absl::Span<float> Writable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (values.use_count() > 1) {
      values = std::make_shared<std::vector<float>>(*values);
    } else {
      // Sole owner. use_count() is a relaxed load; this fence orders the writes that follow
      // after the last snapshot holder's reads (its release of the reference).
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return absl::MakeSpan(*values);
  }
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_CHUNK_STATE_H_
