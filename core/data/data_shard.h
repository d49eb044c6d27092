// One worker's disjoint share of a data set, visited in a fresh seeded order every epoch: held
// in memory, or read from its files batch by batch when it does not fit a memory budget.
#ifndef MONSOON_CORE_DATA_DATA_SHARD_H_
#define MONSOON_CORE_DATA_DATA_SHARD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/background_task.h"
#include "core/data/data_source.h"
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

// Worker `index`'s shard, visited in an order reshuffled every epoch from (seed, index, epoch).
// One contract for both ways of holding it: the shard owns its rows, held or read from its
// source batch by batch, and the order depends only on the shard's size, so a streamed shard
// yields exactly the batches the same rows held in memory would. A streamed shard reads the
// next batch of an epoch on a thread of its own while its owner trains on the last one.
class DataShard {
 public:
  // Every row of `rows` (the rows ShardRows gave this worker, as read), held by the shard.
  DataShard(Dataset rows, int index, uint64_t seed);
  // The rows `rows` of `source` (ascending, as ShardRows gives them), read from it batch by
  // batch: each batch's rows in ascending order, consecutive ones in one read.
  DataShard(std::unique_ptr<DataSource> source, std::vector<uint64_t> rows, int index,
            uint64_t seed);
  DataShard(const DataShard&) = delete;  // a streamed shard's reader refers to it
  DataShard& operator=(const DataShard&) = delete;

  size_t size() const { return size_; }
  // Whether the rows are read from the files per batch.
  bool streamed() const { return source_ != nullptr; }
  // Completed passes over the shard.
  int epoch() const { return epoch_; }
  // Fractional epochs consumed so far.
  double progress() const;
  // Copies the next min(batch, remaining-in-epoch) examples into x / y (resized), advancing
  // to the next epoch (and reshuffling) when the current one is used up. Returns the row
  // count, or a streamed shard's read error (naming the file).
  absl::StatusOr<int> NextBatch(int batch, std::vector<float>* x, std::vector<float>* y);
  // A held shard's rows (streamed: empty).
  const Dataset& held() const { return data_; }
  // The same batch as NextBatch, as the numbers of its rows in held(), advancing the same way.
  // REQUIRES: !streamed().
  void NextBatchRows(int batch, std::vector<uint32_t>* rows);

  // The position after `step` batches (the shard itself does not count batches).
  DataPosition Position(int64_t step) const;
  // Continues from `position` (its epoch's order is recomputed from the seed); InvalidArgument
  // when the cursor lies outside the shard.
  absl::Status Seek(const DataPosition& position);

 private:
  void Shuffle();
  // The next batch's row count (at most `batch`), starting the next epoch where this one is
  // used up.
  int BatchRows(int batch);
  // A streamed batch's read: the source's rows of order_[cursor, cursor + rows), ascending,
  // and where each goes in the batch.
  struct StreamedRead {
    size_t cursor = 0;
    int epoch = 0;
    std::vector<uint64_t> indices;
    std::vector<int> places;
  };
  StreamedRead PlanRead(int rows) const;
  // The shard's examples order_[cursor_, cursor_ + rows) into x / y: from the read started
  // ahead where it is this batch's, else read now.
  absl::Status ReadStreamed(int rows, std::vector<float>* x, std::vector<float>* y);
  // Starts reading the next batch of this epoch (none at its end: the next one is reshuffled).
  void ReadAhead(int batch);

  const Dataset data_;                        // held: the shard's rows; streamed: empty
  const std::unique_ptr<DataSource> source_;  // streamed
  const std::vector<uint64_t> source_rows_;   // streamed: the shard's rows of source_
  const size_t size_;
  const int index_;
  const uint64_t seed_;
  std::vector<size_t> order_;  // this epoch's visiting order
  size_t cursor_ = 0;
  int epoch_ = 0;
  StreamedRead ahead_;  // what reader_'s read in flight is
  // Streamed: reads source_ (only while a read is in flight: never beside this object's own).
  std::unique_ptr<BackgroundTask<absl::StatusOr<Dataset>>> reader_;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_DATA_SHARD_H_
