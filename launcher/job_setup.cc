#include "launcher/job_setup.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/job_secrets.h"
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

absl::Status PrepareResume(const RunDir& run_dir) {
  if (access(run_dir.config_path().c_str(), F_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot resume ", run_dir.root, ": it holds no run (no config.yaml)"));
  }
  std::error_code ec;
  std::filesystem::remove_all(run_dir.rendezvous_dir(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot clear ", run_dir.rendezvous_dir(), ": ", ec.message()));
  }
  return run_dir.Create();
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
