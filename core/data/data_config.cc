#include "core/data/data_config.h"

namespace monsoon {

std::vector<DataFileField> DataConfig::FileFields() const {
  return {
      {"train_images", !train_images.empty(), DataFormat::kIdx, false},
      {"train_labels", !train_labels.empty(), DataFormat::kIdx, false},
      {"test_images", !test_images.empty(), DataFormat::kIdx, true},
      {"test_labels", !test_labels.empty(), DataFormat::kIdx, true},
      {"train", !train.empty(), DataFormat::kCsv, false},
      {"test", !test.empty(), DataFormat::kCsv, true},
      {"train_features", !train_features.empty(), DataFormat::kNpy, false},
      {"train_targets", !train_targets.empty(), DataFormat::kNpy, false},
      {"test_features", !test_features.empty(), DataFormat::kNpy, true},
      {"test_targets", !test_targets.empty(), DataFormat::kNpy, true},
      {"train_files", !train_files.empty(), DataFormat::kHdf5, false},
      {"test_files", !test_files.empty(), DataFormat::kHdf5, true},
  };
}

bool DataConfig::HasTestSet() const {
  for (const DataFileField& f : FileFields()) {
    if (f.format == format && f.test && f.given) return true;
  }
  return false;
}

bool DataConfig::HasTrainingSet() const {
  for (const DataFileField& f : FileFields()) {
    if (f.format == format && !f.test && !f.given) return false;
  }
  return true;
}

}  // namespace monsoon
