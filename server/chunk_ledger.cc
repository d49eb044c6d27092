#include "server/chunk_ledger.h"

#include "absl/strings/str_cat.h"

namespace monsoon {

absl::StatusOr<bool> ChunkLedger::IsDuplicate(int chunk_id, int worker, const PushOrigin& origin) {
  if (origin.sequence == 0) return false;
  const uint64_t processed = clock[worker];
  if (origin.sequence <= processed) {
    ++duplicates[worker];
    return true;
  }
  if (origin.sequence > processed + 1) {
    return absl::OutOfRangeError(absl::StrCat("push ", origin.sequence, " of worker ", worker,
                                              " for chunk ", chunk_id, ": push ", processed + 1,
                                              " has not arrived"));
  }
  return false;
}

void ChunkLedger::Book(int worker, const PushOrigin& origin, bool was_applied) {
  ++clock[worker];
  position[worker] = origin.position;
  if (was_applied) {
    ++applied[worker];
    sequence_sum[worker] += origin.sequence;
  }
}

}  // namespace monsoon
