#include "launcher/cluster/role_assignment.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

std::string NeedText(const ClusterConfig& c) {
  return absl::StrCat(c.servers, " server(s), ", c.workers, " worker(s)",
                      c.evaluator ? ", 1 evaluator" : "");
}

absl::StatusOr<RoleAssignment> ByCounts(const ClusterConfig& c, const TaskEnvironment& t) {
  const int needed = TasksNeeded(c);
  if (t.size < needed) {
    return absl::FailedPreconditionError(
        absl::StrCat("the launch has ", t.size, " task(s) but the job needs ", needed, " (",
                     NeedText(c), "): ask for ", needed, " tasks (sbatch/srun --ntasks=", needed,
                     ") or shrink the cluster section"));
  }
  if (t.rank < c.servers) return RoleId{RoleKind::kServer, t.rank};
  if (t.rank < c.servers + c.workers) return RoleId{RoleKind::kWorker, t.rank - c.servers};
  if (c.evaluator && t.rank == c.servers + c.workers)
    return RoleId{RoleKind::kEvaluator, 0};
  return std::nullopt;
}

absl::StatusOr<RoleAssignment> ByRanks(const ClusterConfig& c, const TaskEnvironment& t) {
  const int listed = static_cast<int>(c.ranks.size());
  if (t.size < listed) {
    return absl::FailedPreconditionError(
        absl::StrCat("the launch has ", t.size, " task(s) but cluster.ranks lists ", listed,
                     ": ask for ", listed, " tasks (sbatch/srun --ntasks=", listed, ")"));
  }
  if (t.rank >= listed) return std::nullopt;
  const RoleKind mine = c.ranks[t.rank];
  int index = 0;
  for (int r = 0; r < t.rank; ++r) index += c.ranks[r] == mine ? 1 : 0;
  switch (mine) {
    case RoleKind::kServer:
      return RoleId{RoleKind::kServer, index};
    case RoleKind::kWorker:
      return RoleId{RoleKind::kWorker, index};
    case RoleKind::kEvaluator:
      break;
  }
  return RoleId{RoleKind::kEvaluator, 0};
}

absl::StatusOr<RoleAssignment> ByHetGroups(const ClusterConfig& c, const TaskEnvironment& t) {
  const std::vector<int> wanted = c.evaluator ? std::vector<int>{c.servers, c.workers, 1}
                                              : std::vector<int>{c.servers, c.workers};
  const char* names[] = {"servers (cluster.servers)", "workers (cluster.workers)", "the evaluator"};
  if (t.het_group_sizes.size() != wanted.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the heterogeneous job has ", t.het_group_sizes.size(), " component(s) but this job needs ",
        wanted.size(), " (0: servers, 1: workers", c.evaluator ? ", 2: evaluator" : "", ")"));
  }
  for (size_t g = 0; g < wanted.size(); ++g) {
    if (t.het_group_sizes[g] != wanted[g]) {
      return absl::FailedPreconditionError(absl::StrCat("heterogeneous job component ", g, " has ",
                                                        t.het_group_sizes[g], " task(s) but ",
                                                        names[g], " need(s) ", wanted[g]));
    }
  }
  if (t.rank < c.servers) return RoleId{RoleKind::kServer, t.rank};
  if (t.rank < c.servers + c.workers) return RoleId{RoleKind::kWorker, t.rank - c.servers};
  return RoleId{RoleKind::kEvaluator, 0};
}

}  // namespace

int TasksNeeded(const ClusterConfig& cluster) {
  return cluster.servers + cluster.workers + (cluster.evaluator ? 1 : 0);
}

absl::StatusOr<RoleAssignment> AssignRole(const ClusterConfig& cluster,
                                          const TaskEnvironment& task) {
  Assignment mode = cluster.assignment;
  if (mode == Assignment::kAuto) {
    mode = !task.het_group_sizes.empty() ? Assignment::kHetGroups
           : !cluster.ranks.empty()      ? Assignment::kRanks
                                         : Assignment::kCounts;
  }
  if (mode == Assignment::kHetGroups) {
    if (task.het_group_sizes.empty()) {
      return absl::FailedPreconditionError(
          "cluster.assignment is het_groups but this is not a heterogeneous SLURM job step");
    }
    return ByHetGroups(cluster, task);
  }
  if (mode == Assignment::kRanks) return ByRanks(cluster, task);
  return ByCounts(cluster, task);
}

}  // namespace monsoon
