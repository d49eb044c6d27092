// Creating a run directory for a job: the resolved config, the job token and the start time.
// `monsoon run` and `monsoon prepare` (the first step of a SLURM batch script) both use it.
#ifndef MONSOON_LAUNCHER_LOCAL_JOB_SETUP_H_
#define MONSOON_LAUNCHER_LOCAL_JOB_SETUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/process/process_setup.h"
#include "core/run/run_dir.h"
#include "core/job/memory_plan.h"

namespace monsoon {

// One monsoon process at a time prepares, runs or resumes a run directory: it holds an
// exclusive lock on RUN_DIR/lock (flock) while this object lives. The processes it starts
// inherit the lock, so after a launcher is killed the directory stays locked until its last
// role has written its final checkpoint and exited; then no lock is left behind.
class RunDirLock {
 public:
  // AlreadyExists, naming the directory, when another process holds it.
  static absl::StatusOr<std::unique_ptr<RunDirLock>> Acquire(const RunDir& run_dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  explicit RunDirLock(int fd) : fd_(fd) {}
  const int fd_;  // owned
};

// Which of a job's roles one host runs: all of them (`monsoon run`), or one each (under SLURM,
// a task per role).
enum class HostRoles { kAll, kOne };

// InvalidArgument naming the largest layer when the roles `roles` says this host runs need
// more than `limit` (CheckMemoryFits).
absl::Status CheckRolesFit(const MemoryEstimate& estimate, HostRoles roles,
                           const MemoryLimit& limit);

// Checks the data against the model (CheckData: every split's shape and targets; no feature
// rows read) and the roles `roles` says this host runs against its memory (EstimateMemory,
// HostMemoryLimit, CheckRolesFit).
absl::Status CheckJobFits(const JobConfig& config, HostRoles roles);

// Checks the job (CheckJobFits), then creates the run directory (or takes an empty one) and writes
// its config, token and start time, under its lock, which the caller holds while the job runs. For
// a worker program's model (model.type: program), first runs the program to write its initial
// weights (RunWorkerProgramInit) and sets config->model.num_params to their count. AlreadyExists
// when the directory is in use by another process, already holds a run (config.yaml, written last,
// exists) or holds anything else: nothing is ever overwritten.
absl::StatusOr<std::unique_ptr<RunDirLock>> PrepareRunDir(JobConfig* config, const RunDir& run_dir,
                                                          HostRoles roles);

// Readies a prepared run directory for `--resume`, under its lock: NotFound unless it holds a
// run, AlreadyExists while another process uses it. The checkpoints stay.
absl::StatusOr<std::unique_ptr<RunDirLock>> PrepareResume(const RunDir& run_dir);

// Removes the servers' published addresses of a prepared run, which are about to change.
absl::Status ResetRendezvous(const RunDir& run_dir);

// A directory of its own under `parent` (created, empty): `parent`/`name`, or
// `parent`/`name`-2, -3, ... when that one exists already.
absl::StatusOr<std::string> CreateUniqueDir(const std::string& parent, const std::string& name);

// Seconds since PrepareRunDir ran for this directory.
absl::StatusOr<double> SecondsSincePrepared(const RunDir& run_dir);

// The wall-clock seconds the run's earlier `monsoon run` invocations spent on it (0 for a new
// run), as recorded by RecordWallSeconds (RUN_DIR/wall_seconds).
absl::StatusOr<double> EarlierWallSeconds(const RunDir& run_dir);
absl::Status RecordWallSeconds(const RunDir& run_dir, double total_seconds);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_JOB_SETUP_H_
