// Where this process sits in a parallel launch, read from the launcher's environment
// variables: SLURM (inside an srun task), Open MPI or PMI (mpirun), or plain local mode. Only
// launcher/ reads the environment; everything here takes it as an explicit map, so tests can
// hand-write one.
#ifndef MONSOON_LAUNCHER_CLUSTER_TASK_ENVIRONMENT_H_
#define MONSOON_LAUNCHER_CLUSTER_TASK_ENVIRONMENT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

using EnvMap = std::map<std::string, std::string>;

// This process's environment (for main() only).
EnvMap CurrentEnvironment();

enum class LaunchSource { kSlurm, kOpenMpi, kPmi, kLocal };

struct TaskEnvironment {
  LaunchSource source = LaunchSource::kLocal;
  int rank = 0;                     // global task rank
  int size = 1;                     // number of tasks
  int local_rank = 0;               // rank among the tasks on this node
  int node_index = 0;               // this node's position in `nodes`
  std::string node_name;            // SLURM: this task's node
  std::vector<std::string> nodes;   // SLURM: the step's nodes, expanded
  std::vector<int> tasks_per_node;  // SLURM: tasks on each of `nodes`
  // SLURM heterogeneous steps: tasks in each component, in order; empty otherwise.
  std::vector<int> het_group_sizes;
  // CUDA device ordinal for this task: local_rank modulo the devices CUDA_VISIBLE_DEVICES lists
  // (CUDA renumbers those from 0), or local_rank when it is unset; none when it hides all GPUs.
  std::optional<int> gpu;
  bool gpus_listed = false;  // CUDA_VISIBLE_DEVICES was set (SLURM sets it for --gpus*)

  // One line: "SLURM task 3/5 (local 1) on node mn2 [1/3]".
  std::string Describe() const;
};

// SLURM is recognised by SLURM_STEP_ID (an srun task), then Open MPI (OMPI_COMM_WORLD_RANK),
// then PMI (PMI_RANK); otherwise plain local mode. InvalidArgument names the variable that is
// missing or malformed; FailedPrecondition when called in a SLURM batch script (outside srun).
absl::StatusOr<TaskEnvironment> DetectTaskEnvironment(const EnvMap& env);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_CLUSTER_TASK_ENVIRONMENT_H_
