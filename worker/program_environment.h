// The contract between the launcher and a worker program (cluster.worker_program): what the
// launcher tells the program through its environment. ToEnv and FromEnv are the only places
// that name the variables.
#ifndef MONSOON_WORKER_PROGRAM_ENVIRONMENT_H_
#define MONSOON_WORKER_PROGRAM_ENVIRONMENT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/enum_names.h"

namespace monsoon {

// What the program is run for: to write its model's initial weights (once, before the
// servers start), or as a worker or the evaluator.
enum class ProgramRole { kInit, kWorker, kEvaluator };
inline constexpr NamedValue<ProgramRole> kProgramRoleValues[] = {
    {ProgramRole::kInit, "init"},
    {ProgramRole::kWorker, "worker"},
    {ProgramRole::kEvaluator, "evaluator"}};
inline constexpr EnumNames<ProgramRole> kProgramRoleNames{"worker-program role",
                                                          kProgramRoleValues};

struct ProgramEnvironment {
  ProgramRole role = ProgramRole::kWorker;
  std::string run_dir;  // absolute
  int index = 0;        // the worker's index; 0 for the evaluator and init
  int gpu = -1;         // the CUDA device the launcher gave the task; < 0: none
  uint64_t seed = 0;    // the job's seed (init: the program has no job file to read yet)

  // The variables that say it, as (name, value) pairs.
  std::vector<std::pair<std::string, std::string>> ToEnv() const;
  // From this process's environment. FailedPrecondition, saying the program is to be started
  // by the launcher, when a variable is missing; InvalidArgument naming one that is malformed.
  static absl::StatusOr<ProgramEnvironment> FromEnv();
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_PROGRAM_ENVIRONMENT_H_
