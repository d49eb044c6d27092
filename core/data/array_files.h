// N-D arrays a user already has: NumPy .npy files and datasets in HDF5 files, read as data
// sources (core/data/data_source.h) that load only the rows asked for; and .npz archives written
// (weights out to NumPy).
#ifndef MONSOON_CORE_DATA_ARRAY_FILES_H_
#define MONSOON_CORE_DATA_ARRAY_FILES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/data/data_source.h"

namespace monsoon {

// Features in one .npy file ([N, ...]: float32, float64 or uint8, uint8 scaled to [0, 1]) and
// targets in another ([N] or [N, k]: any integer or float type), both C-ordered. Opening reads
// the headers only and checks them against the files' sizes; Read loads just the rows asked for.
// Errors name the file and both shapes.
absl::StatusOr<std::unique_ptr<DataSource>> OpenNpySource(const std::string& features_path,
                                                          const std::string& targets_path,
                                                          const TargetSpec& targets);

// The datasets `features_name` and `targets_name` (same types as for .npy) in each of `files`,
// their rows concatenated in the order of the files. Opening reads metadata only; Read loads
// just the rows asked for, by hyperslab.
absl::StatusOr<std::unique_ptr<DataSource>> OpenHdf5Source(const std::vector<std::string>& files,
                                                           const std::string& features_name,
                                                           const std::string& targets_name,
                                                           const TargetSpec& targets);

// A float32 array and the name it goes by in an .npz archive.
struct NamedArray {
  std::string name;
  std::vector<int> dims;
  absl::Span<const float> values;  // row-major, the product of dims long
};

// Writes `arrays` as an .npz archive (what numpy.savez writes: a zip of NAME.npy files, each
// format 1.0, little-endian float32, C order), atomically (a temporary file renamed).
absl::Status WriteNpz(const std::string& path, const std::vector<NamedArray>& arrays);

}  // namespace monsoon

#endif  // MONSOON_CORE_DATA_ARRAY_FILES_H_
