// Creating a run directory for a job: the resolved config, the job token and the start time.
// `monsoon run` and `monsoon prepare` (the first step of a SLURM batch script) both use it.
#ifndef MONSOON_LAUNCHER_JOB_SETUP_H_
#define MONSOON_LAUNCHER_JOB_SETUP_H_

#include "absl/status/statusor.h"
#include "core/job_config.h"
#include "core/run_dir.h"

namespace monsoon {

// AlreadyExists when the directory already holds a run (its config.yaml exists): a run is
// never overwritten. config.yaml is written last, so its presence means "prepared".
absl::Status PrepareRunDir(const JobConfig& config, const RunDir& run_dir);

// Readies a prepared run directory for `--resume`: NotFound unless it holds a run; removes
// the servers' published addresses (they are about to change). The checkpoints stay.
absl::Status PrepareResume(const RunDir& run_dir);

// Seconds since PrepareRunDir ran for this directory.
absl::StatusOr<double> SecondsSincePrepared(const RunDir& run_dir);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_JOB_SETUP_H_
