// What `monsoon run` does when one of its roles' processes ends: a pure decision from the role,
// how it ended, the config's reliability rules and the restarts left (README "Reliability and
// security"). local_job.cc carries it out.
#ifndef MONSOON_LAUNCHER_LOCAL_SUPERVISION_H_
#define MONSOON_LAUNCHER_LOCAL_SUPERVISION_H_

#include <string>
#include <vector>

#include "core/config/job_config.h"
#include "core/role.h"
#include "launcher/cluster/role_assignment.h"
#include "launcher/local/process_group.h"

namespace monsoon {

enum class Action {
  kNone,             // it exited 0
  kRestart,          // start the role again (it rejoins where the servers last heard from it)
  kResumeJob,        // stop every role and resume the whole job from the servers' checkpoints
  kContinueWithout,  // a lost worker: the job goes on without it
  kAbort,            // stop the job with an error naming the role
};

// Restarts left in this run (reliability.worker_restarts per worker, evaluator_restarts,
// server_restarts for the whole job).
struct RestartBudget {
  std::vector<int> worker_restarts;
  int evaluator_restarts = 0;
  int job_resumes = 0;
  static RestartBudget FromConfig(const JobConfig& config);
};

// The action for `role` ending as `exit`; spends the budget it uses. A process stopped from
// outside (ObservedExitKind::kStopped: SIGKILL, a plain kill, the OOM killer), or a worker that
// ended itself as stalled (ObservedExitKind::kStalled), was lost, not wrong: a server's loss
// resumes the job while server_restarts last; a worker or the evaluator is restarted while its
// restarts last, and a worker is then left behind unless the config stops on a lost worker. A crash
// (SIGABRT, SIGSEGV, ...) or a failure aborts the job.
Action Decide(const RoleId& role, const ChildExit& exit, const JobConfig& config,
              RestartBudget* budget);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_SUPERVISION_H_
