// Reading a job file: YAML text to a checked JobConfig, every error naming its field.
#ifndef MONSOON_CORE_CONFIG_CONFIG_READER_H_
#define MONSOON_CORE_CONFIG_CONFIG_READER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"

namespace monsoon {

// Parses YAML text. `base_dir` resolves relative data paths; `overrides` are "a.b=value"
// strings (value in YAML syntax) applied before validation. Errors are InvalidArgument (bad
// field: the message starts with the field's dotted path) or NotFound (a data file is missing:
// the message names the field and the file). Reads no data file: a model whose input shape is
// to come from the data is left with input_shape_from_data set (see ResolveInputShape).
absl::StatusOr<JobConfig> ParseJobConfig(const std::string& yaml_text, const std::string& base_dir,
                                         const std::vector<std::string>& overrides = {});

// The largest job file LoadJobConfig reads.
inline constexpr size_t kMaxConfigBytes = 1 << 20;

// Reads and parses a YAML file (relative paths resolve against the file's directory): a
// regular file of at most kMaxConfigBytes (a FIFO, a device or a directory is refused before
// it is opened), one YAML document whose keys each appear once.
absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path,
                                        const std::vector<std::string>& overrides = {});

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_CONFIG_READER_H_
