#include "launcher/job_setup.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

std::string StartedAtPath(const RunDir& run_dir) { return run_dir.root + "/started_at"; }

}  // namespace

absl::Status PrepareRunDir(const JobConfig& config, const RunDir& run_dir) {
  if (access(run_dir.config_path().c_str(), F_OK) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("run directory ", run_dir.root,
                                                 " already holds a run (config.yaml exists); "
                                                 "choose a new --run-dir"));
  }
  MONSOON_RETURN_IF_ERROR(run_dir.Create());
  MONSOON_RETURN_IF_ERROR(CreateJobToken(run_dir).status());
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(StartedAtPath(run_dir),
                                              absl::StrCat(absl::ToUnixMicros(absl::Now()), "\n")));
  return WriteFileAtomically(run_dir.config_path(), JobConfigToYaml(config));
}

absl::StatusOr<double> SecondsSincePrepared(const RunDir& run_dir) {
  MONSOON_ASSIGN_OR_RETURN(std::string text, ReadFile(StartedAtPath(run_dir)));
  int64_t micros;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &micros)) {
    return absl::DataLossError(absl::StrCat(StartedAtPath(run_dir), " is malformed"));
  }
  return absl::ToDoubleSeconds(absl::Now() - absl::FromUnixMicros(micros));
}

}  // namespace monsoon
