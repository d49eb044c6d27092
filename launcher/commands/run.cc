// `monsoon run CONFIG.yaml [--run-dir DIR] [--set ...] [--yes]` and `monsoon run --resume
// RUN_DIR`.
#include <memory>

#include "core/job/job_data.h"
#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"
#include "launcher/simulation/cost_estimate.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

struct RunOptions {
  std::string config, run_dir, resume;
  std::vector<std::string> sets;
  bool yes = false;
};

// OK when the job is estimated (EstimateCost, from one step measured here) to end within
// kConfirmSeconds on this machine, or `yes`; a job that cannot be estimated here (a worker
// program's model, data that cannot be read, roles that do not fit the host: the run refuses
// those itself) is not held back.
absl::Status ConfirmJobLength(const JobConfig& config, bool yes) {
  if (yes || !config.cluster.worker_program.empty()) return absl::OkStatus();
  const absl::StatusOr<DataSizes> data = CheckData(config);
  if (!data.ok() ||
      !CheckRolesFit(EstimateMemory(config, *data), HostRoles::kAll, HostMemoryLimit()).ok()) {
    return absl::OkStatus();
  }
  const absl::StatusOr<double> step = MeasureStepSeconds(config);
  if (!step.ok()) return absl::OkStatus();
  return ConfirmLongRun(EstimateCost(config, *data, *step).real_seconds, yes, "job",
                        "fewer epochs or workers; `monsoon validate` shows the estimate");
}

int Run(const RunOptions& o) {
  if (!o.resume.empty()) return ResumeJobHere(RunDir{o.resume});
  if (o.config.empty()) {
    return Fail(absl::InvalidArgumentError("run needs a CONFIG.yaml (or --resume RUN_DIR)"), 2);
  }
  auto config = LoadUserConfig(o.config, o.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  const absl::Status confirmed = ConfirmJobLength(*config, o.yes);
  if (!confirmed.ok()) return Fail(confirmed, 2);
  return RunNewJobHere(*config, o.run_dir);
}

}  // namespace

void AddRunCommand(Command& program, int* exit_code) {
  auto o = std::make_shared<RunOptions>();
  Command cmd = program.Subcommand(
      "run",
      "run a whole job on this machine: servers, workers and evaluator as child processes on "
      "loopback; or continue a stopped run (--resume)");
  CommandOption config = cmd.Option("CONFIG.yaml", &o->config, "the job");
  CommandOption resume =
      cmd.Option("--resume", &o->resume,
                 "continue this stopped or failed run: servers load their newest good checkpoints, "
                 "workers continue where the servers last heard from them");
  cmd.Option("--run-dir", &o->run_dir, "the run directory (default runs/JOB/TIMESTAMP)")
      .Excludes(resume);
  AddSetOption(cmd, &o->sets, config).Excludes(resume);
  cmd.Flag("--yes", &o->yes,
           "run a job estimated to take more than an hour on this machine (without it, "
           "such a job stops before it starts, printing the estimate)")
      .Excludes(resume);
  config.Excludes(resume);
  cmd.OnRun([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace monsoon
