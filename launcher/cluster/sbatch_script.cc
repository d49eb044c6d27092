#include "launcher/cluster/sbatch_script.h"

#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/derived_values.h"
#include "launcher/cluster/role_assignment.h"

namespace monsoon {
namespace {

// Single-quotes a word for bash.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// An argument of an #SBATCH line: as it is when it is one plain word, else double-quoted
// with `"` and `\` escaped (sbatch groups quoted text and takes a backslash as an escape).
std::string SbatchArgument(const std::string& s) {
  if (s.find_first_of(" \t\"'\\") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A job component's #SBATCH lines. With GPUs, each task is bound to one of its node's GPUs in
// turn (task i of a node to GPU i mod gpus): it sees that one alone.
std::string Component(int nodes, int tasks, int cpus, int gpus) {
  std::string s = absl::StrCat("#SBATCH --nodes=", nodes, "\n#SBATCH --ntasks=", tasks,
                               "\n#SBATCH --cpus-per-task=", cpus, "\n");
  if (gpus > 0) {
    std::vector<int> ids(gpus);
    std::iota(ids.begin(), ids.end(), 0);
    absl::StrAppend(&s, "#SBATCH --gpus-per-node=", gpus,
                    "\n#SBATCH --gpu-bind=map_gpu:", absl::StrJoin(ids, ","), "\n");
  }
  return s;
}

}  // namespace

std::string SbatchScript(const JobConfig& config, const SbatchInputs& in) {
  const SlurmConfig& s = config.slurm;
  const ClusterConfig& c = config.cluster;
  std::string script =
      absl::StrCat("#!/bin/bash\n", "# Monsoon job '", config.job,
                   "', written by `monsoon sbatch`. Submit with: sbatch FILE\n",
                   "#SBATCH --job-name=", config.job, "\n", "#SBATCH --time=", s.time, "\n",
                   "#SBATCH --output=", SbatchArgument(in.runs_dir + "/slurm-%j.out"), "\n",
                   "#SBATCH --open-mode=append\n#SBATCH --requeue\n");
  if (s.signal_seconds > 0) {
    absl::StrAppend(&script, "#SBATCH --signal=USR1@", s.signal_seconds, "\n");
  }
  if (!s.partition.empty()) absl::StrAppend(&script, "#SBATCH --partition=", s.partition, "\n");
  if (!s.account.empty()) absl::StrAppend(&script, "#SBATCH --account=", s.account, "\n");
  for (const std::string& e : s.extra) absl::StrAppend(&script, "#SBATCH ", e, "\n");
  std::string het_groups;
  if (s.heterogeneous) {
    absl::StrAppend(&script, "# component 0: ", c.servers, " server(s)\n",
                    Component(s.server_nodes, c.servers, s.cpus_per_task, 0),
                    "#SBATCH hetjob\n# component 1: ", c.workers, " worker(s)\n",
                    Component(s.worker_nodes, c.workers, s.cpus_per_task, s.gpus_per_node));
    het_groups = " --het-group=0,1";
    if (c.evaluator) {
      absl::StrAppend(&script, "#SBATCH hetjob\n# component 2: the evaluator\n",
                      Component(1, 1, s.cpus_per_task, 0));
      het_groups = " --het-group=0,1,2";
    }
  } else {
    absl::StrAppend(&script, Component(s.nodes, TasksNeeded(c), s.cpus_per_task, s.gpus_per_node));
  }
  std::string prepare =
      absl::StrCat("\"$MONSOON\" prepare ", ShellQuote(in.config_path), " --run-dir \"$RUN_DIR\"");
  for (const std::string& o : in.overrides) absl::StrAppend(&prepare, " --set ", ShellQuote(o));
  // A lost worker ends the step only when the servers would stop without it anyway.
  const char* kill_on_bad_exit = StopsOnWorkerLoss(config) ? "1" : "0";
  if (!s.setup.empty()) {
    absl::StrAppend(&script, "\n# Site setup (slurm.setup), before the strict mode below.\n",
                    absl::StrJoin(s.setup, "\n"), "\n");
  }
  absl::StrAppend(
      &script, "\nset -euo pipefail\n", "MONSOON=", ShellQuote(in.monsoon_exe), "\n",
      in.cuda_plugin.empty()
          ? ""
          : absl::StrCat("export MONSOON_CUDA_PLUGIN=", ShellQuote(in.cuda_plugin), "\n"),
      in.python_path.empty()
          ? ""
          : absl::StrCat("export MONSOON_PYTHONPATH=", ShellQuote(in.python_path), "\n"),
      "RUN_DIR=", ShellQuote(in.runs_dir), "/slurm-\"$SLURM_JOB_ID\"\n\n",
      "if [ -f \"$RUN_DIR/config.yaml\" ]; then\n",
      "  # Requeued (node failure, preemption, scontrol requeue): continue from the servers'\n",
      "  # checkpoints.\n", "  \"$MONSOON\" prepare --resume --run-dir \"$RUN_DIR\"\n",
      "  RESUME=--resume\n", "else\n",
      "  # The run directory: resolved config and job token (every task reads them).\n  ", prepare,
      "\n", "  RESUME=\n", "fi\n",
      "# The progress line in this output file every 30 s: epoch, ETA, last test accuracy.\n",
      "\"$MONSOON\" status --run-dir \"$RUN_DIR\" --follow 30 &\n", "progress=$!\n",
      "# One task per role; each finds its role from SLURM's environment.\n", "status=0\n",
      "# SLURM 22.05 and later do not pass the batch job's --cpus-per-task on to srun.\n",
      "srun --kill-on-bad-exit=", kill_on_bad_exit, " --cpus-per-task=", s.cpus_per_task,
      het_groups,
      " --output=\"$RUN_DIR/logs/task-%t.log\" --open-mode=append \"$MONSOON\" launch --run-dir "
      "\"$RUN_DIR\" $RESUME || status=$?\n",
      "kill \"$progress\" 2>/dev/null || true\n",
      "# summary.json and trace.json from the metrics, final weights and traces; also after a\n",
      "# failed task if training itself finished (a dead evaluator or worker): the job still\n",
      "# fails.\n",
      "if ! \"$MONSOON\" summarize --run-dir \"$RUN_DIR\" && [ \"$status\" -eq 0 ]; then\n",
      "  status=1\n", "fi\n", "exit \"$status\"\n");
  return script;
}

}  // namespace monsoon
