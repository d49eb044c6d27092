#include "core/data/data_source.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/array_files.h"
#include "core/status_macros.h"

namespace monsoon {

absl::StatusOr<Dataset> DataSource::ReadAll() {
  std::vector<uint64_t> all(rows());
  std::iota(all.begin(), all.end(), uint64_t{0});
  return Read(all);
}

absl::StatusOr<Dataset> InMemorySource::ReadTargets() {
  Dataset out = data_.Empty();
  out.targets = data_.targets;
  return out;
}

absl::StatusOr<Dataset> InMemorySource::Read(const std::vector<uint64_t>& indices) {
  Dataset out = data_.Empty();
  const size_t fd = data_.feature_dim, td = data_.target_dim;
  out.features.resize(indices.size() * fd);
  out.targets.resize(indices.size() * td);
  for (size_t r = 0; r < indices.size(); ++r) {
    std::copy_n(data_.features.data() + indices[r] * fd, fd, out.features.data() + r * fd);
    std::copy_n(data_.targets.data() + indices[r] * td, td, out.targets.data() + r * td);
  }
  return out;
}

namespace {

std::unique_ptr<DataSource> Named(std::unique_ptr<DataSource> source, std::string name) {
  source->set_name(std::move(name));
  return source;
}

absl::StatusOr<std::unique_ptr<DataSource>> InMemory(absl::StatusOr<Dataset> data) {
  if (!data.ok()) return data.status();
  return std::make_unique<InMemorySource>(*std::move(data));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DataSource>> OpenDataSource(const DataConfig& config, bool train,
                                                           const TargetSpec& targets) {
  const std::string split = train ? "train" : "test";
  std::unique_ptr<DataSource> source;
  switch (config.format) {
    case DataFormat::kIdx: {
      const std::string& images = train ? config.train_images : config.test_images;
      MONSOON_ASSIGN_OR_RETURN(
          source, OpenIdxSource(images, train ? config.train_labels : config.test_labels));
      return Named(std::move(source), absl::StrCat("data.", split, "_images (", images, ")"));
    }
    case DataFormat::kCsv: {
      const std::string& path = train ? config.train : config.test;
      MONSOON_ASSIGN_OR_RETURN(source, InMemory(ReadCsvDataset(path, targets)));
      return Named(std::move(source), absl::StrCat("data.", split, " (", path, ")"));
    }
    case DataFormat::kNpy: {
      const std::string& path = train ? config.train_features : config.test_features;
      MONSOON_ASSIGN_OR_RETURN(
          source, OpenNpySource(path, train ? config.train_targets : config.test_targets, targets));
      return Named(std::move(source), absl::StrCat("data.", split, "_features (", path, ")"));
    }
    case DataFormat::kHdf5: {
      const std::vector<std::string>& files = train ? config.train_files : config.test_files;
      MONSOON_ASSIGN_OR_RETURN(
          source, OpenHdf5Source(files, config.features_dataset, config.targets_dataset, targets));
      return Named(std::move(source),
                   absl::StrCat("data.", split, "_files (", absl::StrJoin(files, ", "), ")"));
    }
  }
  return absl::InvalidArgumentError("data.format: unknown");
}

absl::StatusOr<SplitShape> ExampleShapeOf(const DataConfig& config, bool train,
                                          const TargetSpec& targets) {
  if (config.format == DataFormat::kIdx) {  // OpenDataSource would read the images whole
    const std::string& images = train ? config.train_images : config.test_images;
    MONSOON_ASSIGN_OR_RETURN(std::vector<int> shape, ReadIdxImageShape(images));
    return SplitShape{absl::StrCat("data.", train ? "train" : "test", "_images (", images, ")"),
                      std::move(shape)};
  }
  // .npy and HDF5 sources read headers only when opened; CSV is read whole.
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source,
                           OpenDataSource(config, train, targets));
  return SplitShape{source->name(), source->example_shape()};
}

absl::StatusOr<SplitTargets> ReadSplitTargets(const DataConfig& config, bool train,
                                              const TargetSpec& targets) {
  if (config.format == DataFormat::kIdx) {  // OpenDataSource would read the images whole
    const std::string& images = train ? config.train_images : config.test_images;
    MONSOON_ASSIGN_OR_RETURN(
        Dataset labels, ReadIdxLabels(images, train ? config.train_labels : config.test_labels));
    return SplitTargets{absl::StrCat("data.", train ? "train" : "test", "_images (", images, ")"),
                        std::move(labels)};
  }
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> source,
                           OpenDataSource(config, train, targets));
  MONSOON_ASSIGN_OR_RETURN(Dataset read, source->ReadTargets());
  return SplitTargets{source->name(), std::move(read)};
}

absl::StatusOr<std::vector<int>> TrainingExampleShape(const DataConfig& config) {
  if (config.format == DataFormat::kCsv) {
    return absl::InvalidArgumentError(
        "a CSV file's header does not say which columns are features");
  }
  // The targets' layout does not change the features' shape.
  MONSOON_ASSIGN_OR_RETURN(SplitShape split, ExampleShapeOf(config, /*train=*/true, {}));
  return std::move(split.shape);
}

std::vector<uint64_t> ShardRows(uint64_t n, int index, int count, uint64_t seed) {
  std::vector<uint64_t> all(n);
  std::iota(all.begin(), all.end(), uint64_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<uint64_t> rows(all.begin() + n * index / count,
                             all.begin() + n * (index + 1) / count);
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace monsoon
