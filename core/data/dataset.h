// In-memory data sets and their readers: IDX (gzip'd MNIST-family files), CSV, and a
// synthetic linear-regression generator.
#ifndef MONSOON_CORE_DATA_DATASET_H_
#define MONSOON_CORE_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monsoon {

// Row-major features [size() x feature_dim] and targets [size() x target_dim].
// Classification data has target_dim 1 holding the class id as a float, and num_classes > 0.
struct Dataset {
  std::vector<float> features;
  std::vector<float> targets;
  int feature_dim = 0;
  int target_dim = 1;
  int num_classes = 0;             // 0 for regression
  std::vector<int> example_shape;  // one example's features, e.g. {1, 28, 28}

  size_t size() const { return feature_dim == 0 ? 0 : features.size() / feature_dim; }
  // A data set without rows, described as this one is (dimensions, classes, example shape).
  Dataset Empty() const {
    Dataset out;
    out.feature_dim = feature_dim;
    out.target_dim = target_dim;
    out.num_classes = num_classes;
    out.example_shape = example_shape;
    return out;
  }
};

// The labels of an IDX split (data_source.h's OpenIdxSource) (targets, num_classes, feature_dim and example_shape) from the
// label file and the image file's header alone.
absl::StatusOr<Dataset> ReadIdxLabels(const std::string& images_path,
                                      const std::string& labels_path);
// An IDX image file's example shape, [1, rows, cols], from its header alone.
absl::StatusOr<std::vector<int>> ReadIdxImageShape(const std::string& images_path);

// What a data set's targets are: `columns` values per example (regression), or, with
// `class_labels`, one class label (an integer 0, 1, ...). In a CSV file they are the last
// columns.
struct TargetSpec {
  int columns = 1;
  bool class_labels = false;
};

// A class label: a whole number from 0 below 2^24 (exact in a float).
bool IsClassLabel(float v);

// Reads a CSV file with a header row: the target columns `targets` names, every other column a
// feature. Every cell is a finite decimal number. InvalidArgument names the file, line and
// column of a malformed row.
absl::StatusOr<Dataset> ReadCsvDataset(const std::string& path, const TargetSpec& targets = {});

// y = slope * x + intercept + N(0, noise^2), x ~ U(x_min, x_max); deterministic in seed.
struct LinearDataSpec {
  double slope = 2.0;
  double intercept = 1.0;
  double noise = 0.1;
  double x_min = -1.0;
  double x_max = 1.0;
  int rows = 1000;
  uint64_t seed = 1;
};
Dataset GenerateLinearDataset(const LinearDataSpec& spec);

// Writes a regression data set as CSV (header x0..xk,y), readable by ReadCsvDataset.
absl::Status WriteCsvDataset(const Dataset& data, const std::string& path);

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_DATASET_H_
