#include "launcher/local/supervision.h"

#include "absl/strings/str_cat.h"
#include "core/config/derived_values.h"

namespace monsoon {

RestartBudget RestartBudget::FromConfig(const JobConfig& config) {
  RestartBudget budget;
  budget.worker_restarts.assign(config.cluster.workers, config.reliability.worker_restarts);
  budget.evaluator_restarts = config.reliability.evaluator_restarts;
  budget.job_resumes = config.reliability.server_restarts;
  return budget;
}

Action Decide(const RoleId& role, const ChildExit& exit, const JobConfig& config,
              RestartBudget* budget) {
  switch (exit.kind()) {
    case ObservedExitKind::kFinished:
      return Action::kNone;
    case ObservedExitKind::kCrashed:  // a restart would run into the same bug or shortage
    case ObservedExitKind::kFailed:
      return Action::kAbort;
    case ObservedExitKind::kStopped:
    case ObservedExitKind::kStalled:
      break;
  }
  int* restarts = nullptr;
  switch (role.kind) {
    case RoleKind::kServer:
      if (budget->job_resumes == 0) return Action::kAbort;
      --budget->job_resumes;
      return Action::kResumeJob;
    case RoleKind::kWorker:
      restarts = &budget->worker_restarts[role.index];
      break;
    case RoleKind::kEvaluator:
      restarts = &budget->evaluator_restarts;
      break;
  }
  if (*restarts > 0) {
    --*restarts;
    return Action::kRestart;
  }
  if (role.kind == RoleKind::kWorker && !StopsOnWorkerLoss(config)) return Action::kContinueWithout;
  return Action::kAbort;
}

}  // namespace monsoon
