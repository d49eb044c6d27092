// Worker programs (cluster.worker_program): the program a job's workers and evaluator run in
// place of Monsoon's own model, such as a PyTorch script using the `monsoon` Python package.
// Its environment tells it its role, index, GPU, run directory and seed (ProgramEnvironment,
// worker/program_environment.h), and puts the package on PYTHONPATH.
#ifndef MONSOON_LAUNCHER_LOCAL_WORKER_PROGRAM_H_
#define MONSOON_LAUNCHER_LOCAL_WORKER_PROGRAM_H_

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/role.h"
#include "core/run/run_dir.h"

namespace monsoon {

// The directory holding the `monsoon` Python package: $MONSOON_PYTHONPATH when set, else the
// one beside this executable (its Bazel runfiles, or `python/` in a bundle), else the one in
// $RUNFILES_DIR (a Bazel test or run whose runfiles hold it). NotFound when there is none.
absl::StatusOr<std::string> MonsoonPythonPath();

// Replaces this process with the worker program for `role` (a worker or the evaluator). Returns
// only on failure.
absl::Status ExecWorkerProgram(const JobConfig& config, const RunDir& run_dir,
                               const RoleId& role, int gpu);

// Runs the worker program once as ProgramRole::kInit, logging to
// RUN_DIR/logs/init.log, to have it write its model's initial weights
// (RUN_DIR/initial_params.bin, and initial_state_size where some are state); sets
// config->model.num_params and num_state from them. Fails, with the log's last lines, when the
// program fails, writes nothing, or has not ended within transport.rendezvous_timeout_seconds;
// Cancelled when *stop becomes true.
absl::Status RunWorkerProgramInit(JobConfig* config, const RunDir& run_dir,
                                  const std::atomic<bool>* stop);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_WORKER_PROGRAM_H_
