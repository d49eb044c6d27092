// A worker's batches in host memory, drawn from its shard for a model that uploads each one
// (TrainableModel::ComputeGradients). For a model that prefetches (TrainableModel::
// PrefetchBatch), each batch is drawn one step early into the other of two buffers, so that the
// model uploads it while it computes the batch before; the position and progress reported are
// still those of the batches handed out. A buffer is pinned for the model's copies once it has
// held a full batch (no batch is larger, so it never moves again).
#ifndef MONSOON_WORKER_HOST_BATCHES_H_
#define MONSOON_WORKER_HOST_BATCHES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/compute/compute_backend.h"
#include "core/data/data_shard.h"
#include "core/model/trainable_model.h"

namespace monsoon {

// The model's pins of the non-empty `buffers`: host memory its copies reach directly.
std::vector<HostPin> PinAll(TrainableModel* model, const std::vector<absl::Span<float>>& buffers);

class HostBatches {
 public:
  struct Batch {
    const float* x = nullptr;  // [rows x features]
    const float* y = nullptr;  // the rows' targets
    int rows = 0;
  };

  // Batches of `batch_size` rows (fewer at an epoch's end) from `shard` for `model`; both must
  // outlive this object.
  HostBatches(DataShard* shard, TrainableModel* model, int batch_size);

  // The next batch, valid until the next call. For a model that prefetches, the batch after it
  // is drawn now and passed to PrefetchBatch; an error reading it is the next call's.
  absl::StatusOr<Batch> Next();
  // The shard's progress and position as of the batches Next has returned.
  double progress() const;
  DataPosition Position(int64_t step) const;
  // Continues from `position` (DataShard::Seek); a batch drawn ahead is dropped.
  absl::Status Seek(const DataPosition& position);

 private:
  struct Buffer {
    std::vector<float> x, y;
    int rows = 0;
    std::vector<HostPin> pins;  // after x and y: unpinned before they are freed
  };
  // The shard's next batch into `into`, pinning it once it is full.
  absl::Status Draw(Buffer* into);

  DataShard* const shard_;
  TrainableModel* const model_;
  const int batch_size_;
  Buffer buffers_[2];
  int current_ = 0;  // the buffer Next returned last
  // Set while a batch is drawn ahead into the other buffer: how its draw went, and the shard's
  // position and progress before it.
  std::optional<absl::Status> ahead_;
  DataPosition handed_;
  double handed_progress_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_HOST_BATCHES_H_
