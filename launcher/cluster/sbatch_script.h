// The batch script `monsoon sbatch` writes: the job's `slurm:` section as #SBATCH options,
// then `monsoon prepare` (run directory, token), one `srun ... monsoon launch` step for all
// roles, and `monsoon summarize` (summary.json).
#ifndef MONSOON_LAUNCHER_CLUSTER_SBATCH_SCRIPT_H_
#define MONSOON_LAUNCHER_CLUSTER_SBATCH_SCRIPT_H_

#include <string>
#include <vector>

#include "core/config/job_config.h"

namespace monsoon {

struct SbatchInputs {
  std::string monsoon_exe;             // absolute path of the monsoon binary
  std::string config_path;             // absolute path of the job YAML
  std::vector<std::string> overrides;  // --set values, passed on to `monsoon prepare`
  // Absolute, without a line break (an #SBATCH line holds it); the run directory is
  // RUNS_DIR/slurm-JOBID.
  std::string runs_dir;
  // Absolute path of the CUDA plugin the roles load (exported as MONSOON_CUDA_PLUGIN); empty:
  // the binary finds its own.
  std::string cuda_plugin;
  // Absolute path of the directory holding the `monsoon` Python package for a worker program
  // (exported as MONSOON_PYTHONPATH); empty: none, or the binary finds its own.
  std::string python_path;
};

// Homogeneous: one component of slurm.nodes nodes and TasksNeeded() tasks. Heterogeneous:
// component 0 the servers (slurm.server_nodes), 1 the workers (slurm.worker_nodes, with the
// GPUs), 2 the evaluator (one task on one node).
std::string SbatchScript(const JobConfig& config, const SbatchInputs& inputs);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_CLUSTER_SBATCH_SCRIPT_H_
