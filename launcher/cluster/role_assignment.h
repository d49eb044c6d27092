// Which role (server j, worker i, evaluator) a task of a parallel launch plays, decided from
// the job's cluster section and the task's environment.
#ifndef MONSOON_LAUNCHER_CLUSTER_ROLE_ASSIGNMENT_H_
#define MONSOON_LAUNCHER_CLUSTER_ROLE_ASSIGNMENT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/role.h"
#include "launcher/cluster/task_environment.h"

namespace monsoon {

// A task's role, or none: a task beyond the roles the job needs is idle.
using RoleAssignment = std::optional<RoleId>;
// "server 1", "worker 0", "evaluator", or "idle".
inline std::string DescribeAssignment(const RoleAssignment& a) {
  return a.has_value() ? a->Describe() : "idle";
}

// The tasks a job needs: servers + workers + (evaluator ? 1 : 0).
int TasksNeeded(const ClusterConfig& cluster);

// Assignment modes (cluster.assignment):
//   counts      ranks [0, S) are servers, the next W workers, then the evaluator; extra ranks idle
//   ranks       cluster.ranks[r] names rank r's role; roles are numbered in rank order
//   het_groups  heterogeneous SLURM job: component 0 = servers, 1 = workers, 2 = evaluator
//   auto        het_groups in a heterogeneous step, else ranks when cluster.ranks is given,
//               else counts
// FailedPrecondition, with the numbers and what to ask for, when the launch has fewer tasks
// than the job needs or its components do not match the cluster section.
absl::StatusOr<RoleAssignment> AssignRole(const ClusterConfig& cluster,
                                          const TaskEnvironment& task);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_CLUSTER_ROLE_ASSIGNMENT_H_
