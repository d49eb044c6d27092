// `monsoon run`: a whole job on this machine. Servers, workers and the evaluator run as
// child processes of the launcher, on loopback or each on an emulated host of its own
// (network.hosts: namespaces, removed when the job ends); the launcher shows live progress and
// writes summary.json at the end. A worker killed by a signal is restarted (reliability.
// worker_restarts) or, unless reliability.worker_loss stops the job, left behind; a server
// killed by a signal makes the launcher resume the whole job from the servers' checkpoints
// (reliability.server_restarts); any other failure stops the whole job.
#ifndef MONSOON_LAUNCHER_LOCAL_LOCAL_JOB_H_
#define MONSOON_LAUNCHER_LOCAL_LOCAL_JOB_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"
#include "launcher/local/summary.h"

namespace monsoon {

struct LocalJobOptions {
  std::string self_exe;  // the monsoon binary, re-executed for each role
  ProgressOptions progress;
  bool resume = false;         // servers start from their newest checkpoints
};

// Runs the job whose resolved config is already in run_dir (with its token). When every child
// exited 0: writes the summary and returns its figures (WriteSummary); otherwise an error
// naming the failed role and its log. Cancelled when *stop becomes true (Ctrl-C), after
// stopping every child.
absl::StatusOr<JobProgress> RunLocalJob(const JobConfig& config, const RunDir& run_dir,
                                        const LocalJobOptions& options,
                                        const std::atomic<bool>* stop);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_LOCAL_JOB_H_
