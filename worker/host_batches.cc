#include "worker/host_batches.h"

#include <utility>

#include "core/status_macros.h"

namespace monsoon {

std::vector<HostPin> PinAll(TrainableModel* model, const std::vector<absl::Span<float>>& buffers) {
  std::vector<HostPin> pins;
  for (const absl::Span<float> buffer : buffers) {
    if (!buffer.empty()) pins.push_back(model->PinHostMemory(buffer));
  }
  return pins;
}

HostBatches::HostBatches(DataShard* shard, TrainableModel* model, int batch_size)
    : shard_(shard), model_(model), batch_size_(batch_size) {}

absl::StatusOr<HostBatches::Batch> HostBatches::Next() {
  if (ahead_.has_value()) {
    const absl::Status drawn = *std::exchange(ahead_, std::nullopt);
    MONSOON_RETURN_IF_ERROR(drawn);
    current_ = 1 - current_;
  } else {
    MONSOON_RETURN_IF_ERROR(Draw(&buffers_[current_]));
  }
  if (model_->prefetches_batches()) {
    handed_ = shard_->Position(0);
    handed_progress_ = shard_->progress();
    Buffer& next = buffers_[1 - current_];
    ahead_ = Draw(&next);
    if (ahead_->ok()) model_->PrefetchBatch(next.x.data(), next.y.data(), next.rows);
  }
  const Buffer& now = buffers_[current_];
  return Batch{now.x.data(), now.y.data(), now.rows};
}

double HostBatches::progress() const {
  return ahead_.has_value() ? handed_progress_ : shard_->progress();
}

DataPosition HostBatches::Position(int64_t step) const {
  if (!ahead_.has_value()) return shard_->Position(step);
  DataPosition position = handed_;
  position.step = step;
  return position;
}

absl::Status HostBatches::Seek(const DataPosition& position) {
  ahead_.reset();
  return shard_->Seek(position);
}

absl::Status HostBatches::Draw(Buffer* into) {
  MONSOON_ASSIGN_OR_RETURN(into->rows, shard_->NextBatch(batch_size_, &into->x, &into->y));
  if (into->pins.empty() && into->rows == batch_size_) {
    into->pins = PinAll(model_, {absl::MakeSpan(into->x), absl::MakeSpan(into->y)});
  }
  return absl::OkStatus();
}

}  // namespace monsoon
