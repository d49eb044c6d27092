// `monsoon summarize --run-dir DIR`: summary.json and trace.json once training has finished.
#include <memory>

#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"
#include "launcher/local/run_summary.h"

namespace monsoon {

void AddSummarizeCommand(Command& program, int* exit_code) {
  auto run_dir_arg = std::make_shared<RunDirArg>();
  Command cmd = program.Subcommand(
      "summarize",
      "write DIR/summary.json and DIR/trace.json once training has finished (and DIR/params.bin "
      "from the servers' final checkpoints when no evaluator wrote it)");
  run_dir_arg->AddTo(cmd);
  cmd.OnRun([run_dir_arg, exit_code] {
    *exit_code = [&] {
      auto run = run_dir_arg->Open("summarize");
      if (!run.ok()) return Fail(run.status(), 2);
      auto wall = SecondsSincePrepared(run->run_dir);
      if (!wall.ok()) return Fail(wall.status(), 1);
      const absl::StatusOr<JobProgress> result = WriteSummary(run->config, run->run_dir, *wall);
      if (!result.ok()) return Fail(result.status(), 1);
      PrintResult(run->config, run->run_dir, *result);
      return 0;
    }();
  });
}

}  // namespace monsoon
