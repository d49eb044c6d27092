// The rules a job's configuration keeps beyond each field's own range, and advice about
// valid but doubtful settings.
#ifndef MONSOON_CORE_CONFIG_CONFIG_VALIDATION_H_
#define MONSOON_CORE_CONFIG_CONFIG_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/config/job_config.h"

namespace monsoon {

// The rules that tie fields together (a CSV job names data.train, an evaluator needs test
// data, TLS takes all three files, ...): OK, or InvalidArgument naming the first field that
// breaks one. ParseJobConfig applies it; call it on a config built in code.
absl::Status ValidateJobConfig(const JobConfig& config);

// OK when `name` can name a directory of its own (runs/JOB, a compare variant's run) and a
// SLURM job: 1 to 128 letters, digits, '.', '_' and '-', the first a letter, digit or '_'
// (so never '.', '..' or an option). Else InvalidArgument starting with `field`.
absl::Status CheckRunName(const std::string& field, const std::string& name);
// Whether CheckRunName allows `ch` in a name (`first`: as its first character).
bool IsRunNameChar(char ch, bool first);

// Advice about a valid but doubtful config, one line each (e.g. an EASGD alpha above the
// paper's stability bound). Printed by `monsoon validate`, `run` and `launch`.
std::vector<std::string> JobConfigWarnings(const JobConfig& config);

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_CONFIG_VALIDATION_H_
