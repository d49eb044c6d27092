// One worker's disjoint share of a data set, visited in a fresh seeded order every epoch.
#ifndef MONSOON_CORE_DATA_DATA_SHARD_H_
#define MONSOON_CORE_DATA_DATA_SHARD_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/data/dataset.h"

namespace monsoon {

// Where a worker is in its data: after `step` batches, at example `cursor` of pass `epoch`
// over its shard. Saved with every push (servers keep it in their checkpoints), so that a
// restarted worker continues from exactly there.
struct DataPosition {
  int64_t step = 0;
  int64_t epoch = 0;  // 64 bits: the struct has no padding (it is checkpointed raw)
  uint64_t cursor = 0;
};

// Worker `index`'s shard: every row of `rows` (the rows ShardRows gave it, as read), visited in
// an order reshuffled every epoch from (seed, index, epoch). Borrows `rows`.
class DataShard {
 public:
  DataShard(const Dataset* rows, int index, uint64_t seed);

  size_t size() const { return order_.size(); }
  // Completed passes over the shard.
  int epoch() const { return epoch_; }
  // Fractional epochs consumed so far.
  double progress() const;
  // Copies the next min(batch, remaining-in-epoch) examples into x / y (resized), advancing
  // to the next epoch (and reshuffling) when the current one is used up. Returns the row count.
  int NextBatch(int batch, std::vector<float>* x, std::vector<float>* y);

  // The position after `step` batches (the shard itself does not count batches).
  DataPosition Position(int64_t step) const;
  // Continues from `position` (its epoch's order is recomputed from the seed); InvalidArgument
  // when the cursor lies outside the shard.
  absl::Status Seek(const DataPosition& position);

 private:
  void Shuffle();

  const Dataset* const data_;  // borrowed
  const int index_;
  const uint64_t seed_;
  std::vector<size_t> order_;  // this epoch's visiting order
  size_t cursor_ = 0;
  int epoch_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_DATA_SHARD_H_
