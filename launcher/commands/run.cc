// `monsoon run CONFIG.yaml [--run-dir DIR] [--set ...]` and `monsoon run --resume RUN_DIR`.
#include <memory>

#include "launcher/commands/command.h"

namespace monsoon {
namespace {

struct RunOptions {
  std::string config, run_dir, resume;
  std::vector<std::string> sets;
};

int Run(const RunOptions& o) {
  if (!o.resume.empty()) return ResumeJobHere(RunDir{o.resume});
  if (o.config.empty()) {
    return Fail(absl::InvalidArgumentError("run needs a CONFIG.yaml (or --resume RUN_DIR)"), 2);
  }
  auto config = LoadUserConfig(o.config, o.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  return RunNewJobHere(*config, o.run_dir);
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "run a whole job on this machine: servers, workers and evaluator as child processes on "
      "loopback; or continue a stopped run (--resume)");
  CLI::Option* config = cmd->add_option("CONFIG.yaml", o->config, "the job");
  CLI::Option* resume = cmd->add_option(
      "--resume", o->resume,
      "continue this stopped or failed run: servers load their newest good checkpoints, "
      "workers continue where the servers last heard from them");
  cmd->add_option("--run-dir", o->run_dir, "the run directory (default runs/JOB/TIMESTAMP)")
      ->excludes(resume);
  AddSetOption(cmd, &o->sets, config)->excludes(resume);
  config->excludes(resume);
  cmd->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace monsoon
