#include "worker/program_environment.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

constexpr char kRole[] = "MONSOON_ROLE";
constexpr char kRunDir[] = "MONSOON_RUN_DIR";
constexpr char kIndex[] = "MONSOON_INDEX";
constexpr char kGpu[] = "MONSOON_GPU";
constexpr char kSeed[] = "MONSOON_SEED";

// The variable `name`, or FailedPrecondition saying the program was not started by the
// launcher.
absl::StatusOr<std::string> Variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return absl::FailedPreconditionError(absl::StrCat(
        name,
        " is not set: this program is a Monsoon worker program; start it with `monsoon run "
        "JOB.yaml` (cluster.worker_program), not by itself"));
  }
  return std::string(value);
}

template <class T>
absl::Status ParseVariable(const char* name, T* out) {
  MONSOON_ASSIGN_OR_RETURN(const std::string text, Variable(name));
  if (!absl::SimpleAtoi(text, out)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is '", text, "', not an integer"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ProgramEnvironment::ToEnv() const {
  return {{kRole, kProgramRoleNames.Name(role)}, {kRunDir, run_dir},
          {kIndex, absl::StrCat(index)},         {kGpu, absl::StrCat(gpu)},
          {kSeed, absl::StrCat(seed)}};
}

absl::StatusOr<ProgramEnvironment> ProgramEnvironment::FromEnv() {
  ProgramEnvironment env;
  MONSOON_ASSIGN_OR_RETURN(const std::string role, Variable(kRole));
  const absl::StatusOr<ProgramRole> parsed = kProgramRoleNames.Parse(role);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(kRole, ": ", parsed.status().message()));
  }
  env.role = *parsed;
  MONSOON_ASSIGN_OR_RETURN(env.run_dir, Variable(kRunDir));
  MONSOON_RETURN_IF_ERROR(ParseVariable(kIndex, &env.index));
  MONSOON_RETURN_IF_ERROR(ParseVariable(kGpu, &env.gpu));
  MONSOON_RETURN_IF_ERROR(ParseVariable(kSeed, &env.seed));
  return env;
}

}  // namespace monsoon
