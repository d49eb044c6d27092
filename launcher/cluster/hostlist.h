// SLURM's compact list syntaxes, expanded without calling scontrol:
//   host lists   "node[01-04,07],gpu3,login[1-2]x"  (several bracketed ranges, zero padding)
//   task counts  "2(x3),1"                          (SLURM_TASKS_PER_NODE and friends)
#ifndef MONSOON_LAUNCHER_CLUSTER_HOSTLIST_H_
#define MONSOON_LAUNCHER_CLUSTER_HOSTLIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

// "node[01-03,07]" -> node01 node02 node03 node07. Several bracket groups in one name expand
// as a cross product ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). InvalidArgument names the
// offending text.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& hostlist);

// "2(x3),1" -> 2 2 2 1.
absl::StatusOr<std::vector<int>> ExpandTaskCounts(const std::string& counts);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_CLUSTER_HOSTLIST_H_
