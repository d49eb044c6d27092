#include "launcher/commands/command.h"

#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/config/config_reader.h"
#include "core/config/config_validation.h"
#include "core/job/input_shape.h"
#include "core/process/out_of_memory.h"
#include "core/process/process_setup.h"
#include "core/status_macros.h"
#include "launcher/local/job_setup.h"
#include "launcher/local/worker_program.h"
#include "launcher/simulation/simulated_job.h"
#include "server/server_role.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

std::atomic<bool> g_stop{false};

// A launcher outlives its roles' deadline by enough to reap them.
std::atomic<unsigned> g_stop_deadline_seconds{
    static_cast<unsigned>(absl::ToInt64Seconds(kStopDeadline + absl::Seconds(15)))};

extern "C" void OnStopSignal(int) {
  if (!g_stop.exchange(true)) alarm(g_stop_deadline_seconds.load());
}

}  // namespace

std::atomic<bool>* StopFlag() { return &g_stop; }

void InstallStopSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  for (int signal : kStopSignals) sigaction(signal, &sa, nullptr);
  // A closed output pipe (monsoon run ... | head) fails the write, never the job.
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, nullptr);
}

int Fail(const absl::Status& status, int code) {
  std::cerr << "monsoon: " << status.message() << std::endl;
  return code;
}

void RunDirArg::AddTo(Command& command, const char* help) {
  command.Option("--run-dir", &dir, help);
  // Arguments given without --run-dir, so that Open can say how to give them.
  command.Option("stray", &stray, "").Hidden();
}

absl::StatusOr<PreparedRun> RunDirArg::Open(const std::string& command) const {
  if (!stray.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(command, " takes no argument '", stray[0],
                                                   "' (give a run directory as --run-dir DIR)"));
  }
  if (dir.empty()) return absl::InvalidArgumentError("--run-dir is required");
  PreparedRun run{RunDir{dir}, {}};
  MONSOON_ASSIGN_OR_RETURN(run.config, RoleConfig(run.run_dir));
  return run;
}

CommandOption AddSetOption(Command& command, std::vector<std::string>* sets,
                           const CommandOption& config) {
  return command
      .Option("--set", sets,
              "override a config field, e.g. training.epochs=3 (YAML value; repeats)")
      .TakeAll()
      .Needs(config);
}

absl::Status ConfirmLongRun(double seconds, bool yes, absl::string_view what,
                            absl::string_view shorter) {
  if (seconds <= kConfirmSeconds || yes) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "this ", what, " would run about ", DurationText(seconds),
      " on this machine, more than an hour: pass --yes to run it (or ", shorter, ")"));
}

absl::StatusOr<JobConfig> LoadUserConfig(const std::string& path,
                                         const std::vector<std::string>& sets) {
  auto config = LoadJobConfig(path, sets);
  if (config.ok()) {
    const absl::Status resolved = ResolveInputShape(&*config);
    if (!resolved.ok()) return resolved;
    for (const std::string& w : JobConfigWarnings(*config)) {
      std::cerr << "monsoon: warning: " << w << std::endl;
    }
  }
  return config;
}

absl::StatusOr<JobConfig> RoleConfig(const RunDir& run_dir) {
  return LoadJobConfig(run_dir.config_path());
}

absl::StatusOr<std::string> NewDefaultDir(const std::string& name) {
  return CreateUniqueDir(absl::StrCat("runs/", name),
                         absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
}

void PrintResult(const JobConfig& config, const RunDir& run_dir, const JobProgress& p) {
  std::cerr << "monsoon: done; ";
  if (p.has_eval && config.model.loss == LossType::kSoftmaxCrossEntropy) {
    std::cerr << "final test accuracy " << p.test_accuracy << ", ";
  }
  if (p.has_eval) std::cerr << "final test loss " << p.test_loss << "; ";
  std::cerr << "summary in " << run_dir.summary_path() << std::endl;
  if (const std::optional<std::string> w = CollapseWarning(config, p)) {
    std::cerr << "monsoon: warning: " << *w << std::endl;
  }
}

absl::StatusOr<JobProgress> RunPreparedJob(const JobConfig& config, const RunDir& run_dir,
                                           const LocalJobOptions& options) {
  return config.simulation.enabled ? RunSimulatedJob(config, run_dir, options.progress, StopFlag())
                                   : RunLocalJob(config, run_dir, options, StopFlag());
}

int RunJobHere(const JobConfig& config, const RunDir& run_dir, bool resume) {
  if (config.simulation.enabled && resume) {
    return Fail(absl::FailedPreconditionError(
                    "a simulated run is not resumed: run the job again (the same job and seed "
                    "give the same result)"),
                2);
  }
  LocalJobOptions options;
  options.self_exe = SelfExePath();
  options.resume = resume;
  const absl::StatusOr<JobProgress> result = RunPreparedJob(config, run_dir, options);
  if (absl::IsCancelled(result.status())) return Fail(result.status(), kExitStopped);
  if (!result.ok()) return Fail(result.status(), 1);
  PrintResult(config, run_dir, *result);
  return 0;
}

int ResumeJobHere(const RunDir& run_dir) {
  auto lock = PrepareResume(run_dir);  // held while the job runs
  if (!lock.ok()) return Fail(lock.status(), 2);
  auto config = RoleConfig(run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  std::cerr << "monsoon: resuming job '" << config->job << "' in " << run_dir.root << std::endl;
  return RunJobHere(*config, run_dir, /*resume=*/true);
}

int RunNewJobHere(JobConfig config, const std::string& dir) {
  absl::StatusOr<std::string> root = dir.empty() ? NewDefaultDir(config.job) : dir;
  if (!root.ok()) return Fail(root.status(), 1);
  const RunDir run_dir{*root};
  auto lock = PrepareRunDir(&config, run_dir, HostRoles::kAll);  // held while the job runs
  const absl::Status& s = lock.status();
  if (absl::IsAlreadyExists(s) || absl::IsInvalidArgument(s)) return Fail(s, 2);
  if (!s.ok()) return Fail(s, 1);
  std::cerr << "monsoon: job '" << config.job << "': " << config.cluster.servers << " server(s), "
            << config.cluster.workers << " worker(s)"
            << (config.cluster.evaluator ? ", 1 evaluator" : "")
            << (config.simulation.enabled ? ", simulated in this process" : "") << "; run directory "
            << run_dir.root << std::endl;
  return RunJobHere(config, run_dir, /*resume=*/false);
}

int RunRole(const RoleAssignment& assignment, const JobConfig& config, const RunDir& run_dir,
            const std::string& bind_host, int gpu, bool resume) {
  if (!assignment.has_value()) {
    std::cerr << "monsoon: this task has no role in the job; exiting" << std::endl;
    return 0;
  }
  const RoleId& role = *assignment;
  g_stop_deadline_seconds.store(absl::ToInt64Seconds(
      role.kind == RoleKind::kServer ? kStopDeadline : kClientStopDeadline));
  absl::Status s = CatchOutOfMemory([&] {
    if (role.kind == RoleKind::kServer) {
      ServerRoleOptions options;
      options.index = role.index;
      options.bind_host = bind_host;
      options.resume = resume;
      return RunServerRole(config, run_dir, options, StopFlag());
    }
    if (!config.cluster.worker_program.empty()) {
      return ExecWorkerProgram(config, run_dir, role, gpu);  // returns only on failure
    }
    return role.kind == RoleKind::kWorker
               ? RunWorkerRole(config, run_dir, role.index, gpu, StopFlag())
               : RunEvaluatorRole(config, run_dir, gpu, StopFlag());
  });
  // After a stop signal (SIGTERM, SLURM's SIGUSR1, Ctrl-C) every role shuts down, so a role's
  // calls to its peers (connecting, pulling, pushing, evaluating) fail: report the stop, with
  // what the role ran into. The roles themselves only return Cancelled for a stop they saw.
  s = AfterStop(std::move(s), StopFlag()->load(), role.Describe());
  const bool client = role.kind != RoleKind::kServer;
  RecordExit(ExitRecordOf(s, client));
  return s.ok() ? 0 : Fail(s, RoleExitStatus(s, client));
}

}  // namespace monsoon
