// The exactly-once bookkeeping of one chunk: per worker, how many of its pushes (or exchanges)
// the chunk processed, its data position after the last, and the ledger of what was applied.
#ifndef MONSOON_SERVER_CHUNK_LEDGER_H_
#define MONSOON_SERVER_CHUNK_LEDGER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/ps_types.h"

namespace monsoon {

// Plain data; guarded by its chunk's lock.
struct ChunkLedger {
  explicit ChunkLedger(int workers = 0)
      : clock(workers, 0),
        position(workers),
        applied(workers, 0),
        sequence_sum(workers, 0),
        duplicates(workers, 0) {}

  // True (and counted as a duplicate) when origin.sequence was processed already; OutOfRange
  // when an earlier sequence number has not arrived. Unsequenced pushes (0) are never
  // duplicates.
  absl::StatusOr<bool> IsDuplicate(int chunk_id, int worker, const PushOrigin& origin);
  // Books a processed push: the worker's clock and data position, and the ledger.
  void Book(int worker, const PushOrigin& origin, bool was_applied);

  std::vector<uint64_t> clock;         // pushes processed per worker, each once: the worker's clock
  std::vector<DataPosition> position;  // each worker's data position after its last push
  std::vector<uint64_t> applied;       // LedgerEntry::applied
  std::vector<uint64_t> sequence_sum;  // LedgerEntry::sequence_sum
  std::vector<uint64_t> duplicates;    // LedgerEntry::duplicates
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_CHUNK_LEDGER_H_
