// What the `monsoon` commands share: the subcommands each file adds (command_line.h), the stop
// flag the signal handlers set, exit statuses (README "Commands": 0 success, 1 the job failed, 2
// a bad command line, config or launch environment, 3 a server did not answer a client role,
// 130 interrupted) and the helpers several commands use.
#ifndef MONSOON_LAUNCHER_COMMANDS_COMMAND_H_
#define MONSOON_LAUNCHER_COMMANDS_COMMAND_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cli/command_line.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"
#include "launcher/cluster/role_assignment.h"
#include "launcher/local/local_job.h"
#include "launcher/local/process_group.h"

namespace monsoon {

// Each adds its subcommand to `program`; when that subcommand runs, its exit status goes to
// *exit_code.
void AddRunCommand(Command& program, int* exit_code);
void AddCompareCommand(Command& program, int* exit_code);
void AddValidateCommand(Command& program, int* exit_code);
void AddSbatchCommand(Command& program, int* exit_code);
void AddLaunchCommand(Command& program, int* exit_code);
void AddPrepareCommand(Command& program, int* exit_code);
void AddSummarizeCommand(Command& program, int* exit_code);
void AddExportCommand(Command& program, int* exit_code);
void AddStatusCommand(Command& program, int* exit_code);
void AddDevicesCommand(Command& program, int* exit_code);
void AddHostsCommand(Command& program, int* exit_code);
void AddGenLinearCommand(Command& program, int* exit_code);
void AddRoleCommands(Command& program, int* exit_code);

// Set by a stop signal (kStopSignals, core/stop_signals.h; InstallStopSignals);
// polled by the job and role loops. A role still running kStopDeadline (a server) or
// kClientStopDeadline (a worker or the evaluator) after its first stop signal is ended by
// SIGALRM, a launcher kStopDeadline + 15 s after it. SIGPIPE is ignored.
std::atomic<bool>* StopFlag();
void InstallStopSignals();

// Prints "monsoon: MESSAGE" to stderr; returns `code`.
int Fail(const absl::Status& status, int code);

// A prepared run directory and the resolved config its roles read.
struct PreparedRun {
  RunDir run_dir;
  JobConfig config;
};

// --run-dir DIR for a command that takes no other argument.
struct RunDirArg {
  std::string dir;
  std::vector<std::string> stray;
  void AddTo(Command& command, const char* help = "the run directory");
  // The run and its config. InvalidArgument for an argument given without the option ("status
  // takes no argument 'runs/x' (give a run directory as --run-dir DIR)") or a missing
  // --run-dir; the config's own errors.
  absl::StatusOr<PreparedRun> Open(const std::string& command) const;
};

// --set key.path=value (repeats; needs `config`).
CommandOption AddSetOption(Command& command, std::vector<std::string>* sets,
                           const CommandOption& config);

// A run or study estimated to take longer than this on this machine needs --yes.
inline constexpr double kConfirmSeconds = 3600;
// OK when `seconds` (an estimate for this machine) is at most kConfirmSeconds, or `yes`;
// otherwise FailedPrecondition "this WHAT would run about 104h on this machine, more than an
// hour: pass --yes to run it (or SHORTER)".
absl::Status ConfirmLongRun(double seconds, bool yes, absl::string_view what,
                            absl::string_view shorter);

// Loads a config the user named, printing its warnings (JobConfigWarnings) to stderr.
absl::StatusOr<JobConfig> LoadUserConfig(const std::string& path,
                                         const std::vector<std::string>& sets);
// The resolved config every role reads from its run directory.
absl::StatusOr<JobConfig> RoleConfig(const RunDir& run_dir);
// "runs/NAME/YYYYmmdd-HHMMSS" (with "-2", "-3", ... when one started in the same second),
// created: the default directory of a run or a study.
absl::StatusOr<std::string> NewDefaultDir(const std::string& name);

// Runs the job on this machine (RunLocalJob) and ends with its closing line; the exit status:
// 0, 130 when interrupted, 1 when a role failed.
int RunJobHere(const JobConfig& config, const RunDir& run_dir, bool resume);
// Runs the prepared job in `run_dir` on this machine: its roles as child processes
// (RunLocalJob), or all in this process on a virtual clock with simulation.enabled
// (RunSimulatedJob). Stops on StopFlag().
absl::StatusOr<JobProgress> RunPreparedJob(const JobConfig& config, const RunDir& run_dir,
                                           const LocalJobOptions& options);
// `run --resume RUN_DIR` (also `launch --resume` outside a parallel launcher).
int ResumeJobHere(const RunDir& run_dir);
// `run CONFIG.yaml` with a prepared config (also `launch CONFIG.yaml` outside one).
int RunNewJobHere(JobConfig config, const std::string& run_dir);
// The closing line of a finished job: "monsoon: done; final test accuracy ..., summary in ...".
void PrintResult(const JobConfig& config, const RunDir& run_dir, const JobProgress& progress);
// Runs one role of a prepared job; the exit status of the process. `gpu` is the CUDA device
// for workers and the evaluator (< 0: none).
int RunRole(const RoleAssignment& role, const JobConfig& config, const RunDir& run_dir,
            const std::string& bind_host, int gpu, bool resume);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_COMMANDS_COMMAND_H_
