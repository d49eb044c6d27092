// Writing a JobConfig back: the resolved YAML a run keeps (RUN_DIR/config.yaml) and its fields.
#ifndef MONSOON_CORE_CONFIG_CONFIG_WRITER_H_
#define MONSOON_CORE_CONFIG_CONFIG_WRITER_H_

#include <string>
#include <utility>
#include <vector>

#include "core/config/job_config.h"

namespace monsoon {

// The fully resolved configuration (every default filled in, absolute paths) as YAML that
// ParseJobConfig reads back to the same JobConfig.
std::string JobConfigToYaml(const JobConfig& config);

// Every field JobConfigToYaml writes, as ("section.key", its YAML value), in file order.
std::vector<std::pair<std::string, std::string>> JobConfigFields(const JobConfig& config);

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_CONFIG_WRITER_H_
