#include "core/data/data_shard.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace monsoon {

DataShard::DataShard(Dataset rows, int index, uint64_t seed)
    : data_(std::move(rows)), size_(data_.size()), index_(index), seed_(seed) {
  Shuffle();
}

DataShard::DataShard(std::unique_ptr<DataSource> source, std::vector<uint64_t> rows, int index,
                     uint64_t seed)
    : source_(std::move(source)),
      source_rows_(std::move(rows)),
      size_(source_rows_.size()),
      index_(index),
      seed_(seed) {
  Shuffle();
}

void DataShard::Shuffle() {
  order_.resize(size_);
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::mt19937_64 rng(seed_ ^ (0x9e3779b97f4a7c15ULL * (index_ + 1)) ^ (uint64_t(epoch_) << 32));
  std::shuffle(order_.begin(), order_.end(), rng);
  cursor_ = 0;
}

double DataShard::progress() const {
  return order_.empty() ? 0.0 : epoch_ + static_cast<double>(cursor_) / order_.size();
}

DataPosition DataShard::Position(int64_t step) const { return {step, epoch_, cursor_}; }

absl::Status DataShard::Seek(const DataPosition& position) {
  if (position.epoch < 0 || position.epoch > (1 << 30) || position.cursor > order_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data position epoch ", position.epoch, " example ", position.cursor,
                     " lies outside this shard of ", order_.size(), " examples"));
  }
  epoch_ = static_cast<int>(position.epoch);
  Shuffle();
  cursor_ = position.cursor;
  return absl::OkStatus();
}

int DataShard::BatchRows(int batch) {
  if (order_.empty()) return 0;
  if (cursor_ == order_.size()) {
    ++epoch_;
    Shuffle();
  }
  return static_cast<int>(std::min<size_t>(batch, order_.size() - cursor_));
}

absl::StatusOr<int> DataShard::NextBatch(int batch, std::vector<float>* x, std::vector<float>* y) {
  const int rows = BatchRows(batch);
  if (streamed()) {
    MONSOON_RETURN_IF_ERROR(ReadStreamed(rows, x, y));
  } else {
    const size_t fd = data_.feature_dim;
    const size_t td = data_.target_dim;
    x->resize(rows * fd);
    y->resize(rows * td);
    for (int r = 0; r < rows; ++r) {
      const size_t e = order_[cursor_ + r];
      std::copy_n(data_.features.data() + e * fd, fd, x->data() + r * fd);
      std::copy_n(data_.targets.data() + e * td, td, y->data() + r * td);
    }
  }
  cursor_ += rows;
  return rows;
}

void DataShard::NextBatchRows(int batch, std::vector<uint32_t>* rows) {
  const int n = BatchRows(batch);
  rows->assign(order_.begin() + cursor_, order_.begin() + cursor_ + n);
  cursor_ += n;
}

absl::Status DataShard::ReadStreamed(int rows, std::vector<float>* x, std::vector<float>* y) {
  // The batch's rows of the source, ascending, each with its place in the batch.
  std::vector<std::pair<uint64_t, int>> wanted(rows);
  for (int r = 0; r < rows; ++r) wanted[r] = {source_rows_[order_[cursor_ + r]], r};
  std::sort(wanted.begin(), wanted.end());
  std::vector<uint64_t> indices(rows);
  for (int i = 0; i < rows; ++i) indices[i] = wanted[i].first;
  MONSOON_ASSIGN_OR_RETURN(const Dataset read, source_->Read(indices));
  const size_t fd = read.feature_dim;
  const size_t td = read.target_dim;
  x->resize(rows * fd);
  y->resize(rows * td);
  for (int i = 0; i < rows; ++i) {
    const int r = wanted[i].second;
    std::copy_n(read.features.data() + i * fd, fd, x->data() + r * fd);
    std::copy_n(read.targets.data() + i * td, td, y->data() + r * td);
  }
  return absl::OkStatus();
}

}  // namespace monsoon
