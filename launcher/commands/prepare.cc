// `monsoon prepare CONFIG.yaml --run-dir DIR [--set ...]` and `prepare --resume --run-dir DIR`:
// ready a run directory for `launch`.
#include <iostream>
#include <memory>

#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"

namespace monsoon {
namespace {

struct PrepareOptions {
  std::string config, run_dir;
  std::vector<std::string> sets;
  bool resume = false;
};

int Prepare(const PrepareOptions& o) {
  if (o.run_dir.empty()) return Fail(absl::InvalidArgumentError("--run-dir is required"), 2);
  const RunDir run_dir{o.run_dir};
  if (o.resume) {
    const absl::Status s = PrepareResume(run_dir).status();
    if (!s.ok()) return Fail(s, 2);
    std::cerr << "monsoon: " << run_dir.root << " is ready to resume" << std::endl;
    return 0;
  }
  if (o.config.empty()) {
    return Fail(absl::InvalidArgumentError("prepare needs a CONFIG.yaml (or --resume)"), 2);
  }
  auto config = LoadUserConfig(o.config, o.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  const absl::Status s = PrepareRunDir(&*config, run_dir, HostRoles::kOne).status();
  if (!s.ok()) return Fail(s, absl::IsAlreadyExists(s) ? 2 : 1);
  std::cerr << "monsoon: prepared " << run_dir.root << " for job '" << config->job << "'"
            << std::endl;
  return 0;
}

}  // namespace

void AddPrepareCommand(Command& program, int* exit_code) {
  auto o = std::make_shared<PrepareOptions>();
  Command cmd = program.Subcommand(
      "prepare",
      "create a run directory (resolved config, job token) for `launch`; with --resume, ready "
      "one for `launch --resume` (a requeued SLURM job)");
  CommandOption config = cmd.Option("CONFIG.yaml", &o->config, "the job");
  cmd.Option("--run-dir", &o->run_dir, "the run directory");
  CommandOption sets = AddSetOption(cmd, &o->sets, config);
  CommandOption resume = cmd.Flag("--resume", &o->resume, "ready the run to resume");
  config.Excludes(resume);
  sets.Excludes(resume);
  cmd.OnRun([o, exit_code] { *exit_code = Prepare(*o); });
}

}  // namespace monsoon
