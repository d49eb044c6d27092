// The sources that read a job's data (DataConfig): their size and example
// shape known on opening, their rows read on demand, so that each worker loads only its shard.
#ifndef MONSOON_CORE_DATA_DATA_SOURCE_H_
#define MONSOON_CORE_DATA_DATA_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/data_config.h"
#include "core/data/dataset.h"

namespace monsoon {

// A split of a data set on disk.
class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual uint64_t rows() const = 0;
  // One example's features, e.g. {1, 28, 28}.
  virtual const std::vector<int>& example_shape() const = 0;
  // The rows at `indices` (ascending, each below rows()), in that order.
  virtual absl::StatusOr<Dataset> Read(const std::vector<uint64_t>& indices) = 0;
  // Every row. The source may hand its own rows over and be empty afterwards.
  virtual absl::StatusOr<Dataset> ReadAll();
  // Every row's targets, without the features (empty; feature_dim and example_shape set), and
  // num_classes for class labels.
  virtual absl::StatusOr<Dataset> ReadTargets() = 0;
  // The split as messages name it: "data.train_images (PATH)".
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
};

// A data set already in memory (a CSV file is read whole) as a source.
class InMemorySource : public DataSource {
 public:
  explicit InMemorySource(Dataset data) : data_(std::move(data)) {}
  uint64_t rows() const override { return data_.size(); }
  const std::vector<int>& example_shape() const override { return data_.example_shape; }
  absl::StatusOr<Dataset> Read(const std::vector<uint64_t>& indices) override;
  absl::StatusOr<Dataset> ReadAll() override { return std::move(data_); }
  absl::StatusOr<Dataset> ReadTargets() override;

 private:
  Dataset data_;
};

// An IDX image file (magic 0x803, uint8 pixels, read as floats scaled to [0, 1]) and its IDX
// label file (magic 0x801), either gzip-compressed or plain: held as the file's bytes, each row
// converted when read. NotFound names a missing file; InvalidArgument names a malformed one.
absl::StatusOr<std::unique_ptr<DataSource>> OpenIdxSource(const std::string& images_path,
                                                          const std::string& labels_path);

// Opens the training or test split `config` names; `targets` says what the targets are.
absl::StatusOr<std::unique_ptr<DataSource>> OpenDataSource(const DataConfig& config, bool train,
                                                           const TargetSpec& targets);

// A split's example shape, with the name OpenDataSource gives the split ("data.train_images
// (PATH)"). From the files' headers where the format has them: IDX images are [1, H, W], .npy
// and HDF5 features their trailing dimensions; a CSV split is read whole.
struct SplitShape {
  std::string name;
  std::vector<int> shape;
};
absl::StatusOr<SplitShape> ExampleShapeOf(const DataConfig& config, bool train,
                                          const TargetSpec& targets);

// A split's targets (DataSource::ReadTargets), with the split's name as ExampleShapeOf gives
// it. Reads no feature rows where the format keeps them apart: IDX labels, .npy and HDF5
// targets; a CSV split is read whole.
struct SplitTargets {
  std::string name;
  Dataset targets;
};
absl::StatusOr<SplitTargets> ReadSplitTargets(const DataConfig& config, bool train,
                                              const TargetSpec& targets);

// One training example's shape from the files' headers alone (ExampleShapeOf). InvalidArgument
// for CSV, whose columns become features or targets only by the model's output size.
absl::StatusOr<std::vector<int>> TrainingExampleShape(const DataConfig& config);

// The rows of a data set of `n` that worker `index` of `count` owns, ascending: a seed-wide
// permutation cut into `count` contiguous parts, so shards are disjoint and cover every row.
std::vector<uint64_t> ShardRows(uint64_t n, int index, int count, uint64_t seed);

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_DATA_SOURCE_H_
