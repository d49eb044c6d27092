// Where a job's data lives: the `data:` section of a job file.
#ifndef MONSOON_CORE_DATA_DATA_CONFIG_H_
#define MONSOON_CORE_DATA_DATA_CONFIG_H_

#include <string>
#include <vector>

#include "core/enum_names.h"

namespace monsoon {

enum class DataFormat { kIdx, kCsv, kNpy, kHdf5 };
inline constexpr NamedValue<DataFormat> kDataFormatValues[] = {{DataFormat::kIdx, "idx"},
                                                               {DataFormat::kCsv, "csv"},
                                                               {DataFormat::kNpy, "npy"},
                                                               {DataFormat::kHdf5, "hdf5"}};
inline constexpr EnumNames<DataFormat> kDataFormatNames{"data format", kDataFormatValues};

// One of DataConfig's file fields: its key under data:, whether it is given, the format it
// belongs to, and whether it names test data.
struct DataFileField {
  const char* key;
  bool given;
  DataFormat format;
  bool test;
};

struct DataConfig {
  DataFormat format = DataFormat::kIdx;
  // idx
  std::string train_images, train_labels, test_images, test_labels;
  // csv
  std::string train, test;
  // npy
  std::string train_features, train_targets, test_features, test_targets;
  // hdf5
  std::vector<std::string> train_files, test_files;
  std::string features_dataset = "features", targets_dataset = "targets";
  // The most memory (MiB) a worker's shard may take held whole; 0: a quarter of the node's.
  int memory_budget_mib = 0;

  // Every file field, of every format.
  std::vector<DataFileField> FileFields() const;
  // Whether the job names a test set: a test field of its format.
  bool HasTestSet() const;
  // Whether every training field of its format is given.
  bool HasTrainingSet() const;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_DATA_CONFIG_H_
