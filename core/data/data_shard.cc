#include "core/data/data_shard.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>
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
      seed_(seed),
      reader_(std::make_unique<BackgroundTask<absl::StatusOr<Dataset>>>(/*asynchronous=*/true)) {
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
  if (streamed()) ReadAhead(batch);
  return rows;
}

void DataShard::NextBatchRows(int batch, std::vector<uint32_t>* rows) {
  const int n = BatchRows(batch);
  rows->assign(order_.begin() + cursor_, order_.begin() + cursor_ + n);
  cursor_ += n;
}

DataShard::StreamedRead DataShard::PlanRead(int rows) const {
  std::vector<std::pair<uint64_t, int>> wanted(rows);
  for (int r = 0; r < rows; ++r) wanted[r] = {source_rows_[order_[cursor_ + r]], r};
  std::sort(wanted.begin(), wanted.end());
  StreamedRead plan{cursor_, epoch_, std::vector<uint64_t>(rows), std::vector<int>(rows)};
  for (int i = 0; i < rows; ++i) std::tie(plan.indices[i], plan.places[i]) = wanted[i];
  return plan;
}

absl::Status DataShard::ReadStreamed(int rows, std::vector<float>* x, std::vector<float>* y) {
  std::optional<absl::StatusOr<Dataset>> read;
  if (reader_->in_flight()) {
    read = reader_->Wait();
    if (ahead_.cursor != cursor_ || ahead_.epoch != epoch_ ||
        ahead_.indices.size() != static_cast<size_t>(rows)) {
      read.reset();  // another batch's (Seek moved the shard since)
    }
  }
  if (!read.has_value()) {
    ahead_ = PlanRead(rows);
    read = source_->Read(ahead_.indices);
  }
  // ahead_ is now this batch's read.
  if (!read->ok()) return read->status();
  const Dataset& data = **read;
  const size_t fd = data.feature_dim;
  const size_t td = data.target_dim;
  x->resize(rows * fd);
  y->resize(rows * td);
  for (int i = 0; i < rows; ++i) {
    const int r = ahead_.places[i];
    std::copy_n(data.features.data() + i * fd, fd, x->data() + r * fd);
    std::copy_n(data.targets.data() + i * td, td, y->data() + r * td);
  }
  return absl::OkStatus();
}

void DataShard::ReadAhead(int batch) {
  if (cursor_ >= order_.size()) return;
  ahead_ = PlanRead(static_cast<int>(std::min<size_t>(batch, order_.size() - cursor_)));
  reader_->Start([this, indices = ahead_.indices] { return source_->Read(indices); });
}

}  // namespace monsoon
