// The `monsoon` command line: runs jobs and, as child processes, their roles.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/dataset.h"
#include "core/job_config.h"
#include "core/process_setup.h"
#include "core/run_dir.h"
#include "launcher/compare.h"
#include "launcher/job_setup.h"
#include "launcher/local_job.h"
#include "launcher/network_address.h"
#include "launcher/role_assignment.h"
#include "launcher/sbatch_script.h"
#include "launcher/summary.h"
#include "launcher/task_environment.h"
#include "server/server_role.h"
#include "worker/compute_backends.h"
#include "worker/grpc_ps_client.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

// Set by SIGINT/SIGTERM/SIGUSR1; polled by the job and role loops.
std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);  // SLURM's --signal warning before the time limit
}

constexpr char kUsage[] = R"(usage: monsoon <command> [options]

commands:
  run CONFIG.yaml [--run-dir DIR] [--set key=value ...]
        run a whole job on this machine: servers, workers and evaluator as child
        processes on loopback; writes the run directory (default runs/JOB/TIMESTAMP)
  run --resume RUN_DIR
        continue a stopped or failed run: servers load their newest good checkpoints,
        workers continue where the servers last heard from them
  compare STUDY.yaml [--out DIR]
        run each variant of a study (one base job, several algorithms or knobs) in turn,
        then write DIR/compare.csv, compare.md and compare.svg (default
        runs/STUDY/TIMESTAMP); see README "Comparing algorithms"
  validate CONFIG.yaml [--set key=value ...]
        check a config and print it fully resolved
  sbatch CONFIG.yaml [--set key=value ...] [--script FILE] [--submit [--wait]]
        write a SLURM batch script for the job (from its slurm: section) and print it;
        --submit submits it, --wait waits for the job and returns its exit status
  launch [CONFIG.yaml] --run-dir DIR [--set key=value ...] [--resume]
        inside an srun task (or under mpirun): run this task's role, chosen from the
        launcher's environment; with CONFIG, task 0 prepares DIR; with --resume, servers
        start from their checkpoints. Outside any parallel launcher: the whole job on this
        machine, as `run`
  prepare CONFIG.yaml --run-dir DIR [--set key=value ...]
        create a run directory (resolved config, job token) for `launch`
  prepare --resume --run-dir DIR
        ready a run directory for `launch --resume` (a requeued SLURM job)
  summarize --run-dir DIR
        write DIR/summary.json and DIR/trace.json once training has finished (and
        DIR/params.bin from the servers' final checkpoints when no evaluator wrote it);
        refused, exit 1, when a server did not see every worker finish or get lost
  status --run-dir DIR
        where a run stands (e.g. a SLURM job's, from a login node): progress, whether
        training has finished, is running (its servers answer with the job's token) or
        stopped, and its summary; exit 0 once training has finished, else 1
  devices
        list the CUDA devices this machine can use (exit 1 and the reason when none)
  gen-linear --out FILE [--slope M] [--intercept B] [--noise S] [--rows N] [--seed K]
             [--x-min A] [--x-max B]
        write a synthetic linear-regression CSV (y = M x + B + noise)

role commands (started by `monsoon run`; the run directory holds config.yaml and token):
  server --run-dir DIR --index J [--bind HOST] [--resume]
  worker --run-dir DIR --index I [--gpu G]
  evaluator --run-dir DIR [--gpu G]
)";

// Parsed "--flag value" options plus positional arguments; --set may repeat.
struct Args {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> sets;

  const std::string* Get(const std::string& name) const {
    for (const auto& [k, v] : flags) {
      if (k == name) return &v;
    }
    return nullptr;
  }
};

// What a command takes besides its options: nothing, or one file (CONFIG.yaml, STUDY.yaml).
enum class Operand { kNone, kOptionalFile, kFile };

// One `monsoon` command: its options ("--flag VALUE"; "--set" may repeat), its switches
// ("--flag"), its operand and the function that runs it.
struct Command {
  std::string name;
  std::vector<std::string> options;
  std::vector<std::string> switches;
  Operand operand = Operand::kNone;
  std::string operand_name;
  int (*run)(const Args&);
};

// Parses argv[first..] for `command` ("--flag value" or "--flag=value"). InvalidArgument for
// an option the command does not take, an option given twice (--set repeats), a missing or
// surplus operand, an operand or --set next to --resume (a resumed run keeps its config), and
// --set without an operand to change.
absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first, const Command& command) {
  const auto listed = [](const std::vector<std::string>& list, const std::string& a) {
    return std::find(list.begin(), list.end(), a) != list.end();
  };
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      args.positional.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    std::string value;
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    if (listed(command.switches, a)) {
      if (eq != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(a, " takes no value"));
      }
    } else if (listed(command.options, a)) {
      if (eq == std::string::npos) {
        if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(a, " needs a value"));
        value = argv[++i];
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", a, " for ", command.name));
    }
    if (a == "--set") {
      args.sets.push_back(value);
      continue;
    }
    if (args.Get(a) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(a, " given twice"));
    }
    args.flags.emplace_back(a, value);
  }
  const bool resume = args.Get("--resume") != nullptr;
  if (command.operand == Operand::kNone && !args.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        command.name, " takes no argument '", args.positional[0], "'",
        listed(command.options, "--run-dir") && args.Get("--run-dir") == nullptr
            ? " (give a run directory as --run-dir DIR)"
            : ""));
  }
  if (args.positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(command.name, " takes one ",
                                                   command.operand_name, ", got ",
                                                   absl::StrJoin(args.positional, " ")));
  }
  if (resume && (!args.positional.empty() || !args.sets.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat(command.name, " --resume continues a run with its own config: leave out ",
                     command.operand_name, " and --set"));
  }
  if (command.operand == Operand::kFile && !resume && args.positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(command.name, " needs a ", command.operand_name));
  }
  if (!args.sets.empty() && args.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        command.name, ": --set changes a ", command.operand_name, ", and none is given"));
  }
  return args;
}

absl::StatusOr<int> IntFlag(const Args& args, const std::string& name) {
  const std::string* v = args.Get(name);
  int out;
  if (v == nullptr || !absl::SimpleAtoi(*v, &out) || out < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " needs a non-negative integer"));
  }
  return out;
}

absl::StatusOr<RunDir> RunDirFlag(const Args& args) {
  const std::string* dir = args.Get("--run-dir");
  if (dir == nullptr) return absl::InvalidArgumentError("--run-dir is required");
  return RunDir{*dir};
}

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

int Fail(const absl::Status& status, int code) {
  std::cerr << "monsoon: " << status.message() << std::endl;
  return code;
}

// The closing line of a finished job: "monsoon: done; final test accuracy ..., summary in ...";
// `p` holds the summary's figures.
void PrintResult(const JobConfig& config, const RunDir& run_dir, const JobProgress& p) {
  std::cerr << "monsoon: done; ";
  if (p.has_eval && config.model.loss == LossType::kSoftmaxCrossEntropy) {
    std::cerr << "final test accuracy " << p.test_accuracy << ", ";
  }
  if (p.has_eval) std::cerr << "final test loss " << p.test_loss << "; ";
  std::cerr << "summary in " << run_dir.summary_path() << std::endl;
}

// Loads a config the user named, printing its warnings (JobConfigWarnings) to stderr.
absl::StatusOr<JobConfig> LoadUserConfig(const Args& args) {
  auto config = LoadJobConfig(args.positional[0], args.sets);
  if (config.ok()) {
    for (const std::string& w : JobConfigWarnings(*config)) {
      std::cerr << "monsoon: warning: " << w << std::endl;
    }
  }
  return config;
}

// Loads the resolved config every role reads from its run directory.
absl::StatusOr<JobConfig> RoleConfig(const RunDir& run_dir) {
  return LoadJobConfig(run_dir.config_path());
}

// Runs the job on this machine (RunLocalJob) and ends with its closing line: exit status 0,
// 130 when interrupted, 1 when a role failed.
int RunJobHere(const JobConfig& config, const RunDir& run_dir, const LocalJobOptions& options) {
  const absl::StatusOr<JobProgress> result = RunLocalJob(config, run_dir, options, &g_stop);
  if (absl::IsCancelled(result.status())) return Fail(result.status(), 130);
  if (!result.ok()) return Fail(result.status(), 1);
  PrintResult(config, run_dir, *result);
  return 0;
}

// `monsoon run --resume RUN_DIR`.
int CmdResume(const RunDir& run_dir) {
  absl::Status s = PrepareResume(run_dir);
  if (!s.ok()) return Fail(s, 2);
  auto config = RoleConfig(run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  std::cerr << "monsoon: resuming job '" << config->job << "' in " << run_dir.root << std::endl;
  LocalJobOptions options;
  options.self_exe = SelfExe();
  options.resume = true;
  return RunJobHere(*config, run_dir, options);
}

int CmdRun(const Args& args) {
  if (const std::string* resume = args.Get("--resume")) {
    if (args.Get("--run-dir") != nullptr) {
      return Fail(absl::InvalidArgumentError(
                      "run --resume RUN_DIR names the run directory itself: leave out --run-dir"),
                  2);
    }
    return CmdResume(RunDir{*resume});
  }
  auto config = LoadUserConfig(args);
  if (!config.ok()) return Fail(config.status(), 2);
  RunDir run_dir;
  if (const std::string* d = args.Get("--run-dir")) {
    run_dir.root = *d;
  } else {
    run_dir.root =
        absl::StrCat("runs/", config->job, "/",
                     absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
  }
  absl::Status s = PrepareRunDir(*config, run_dir);
  if (absl::IsAlreadyExists(s) || absl::IsInvalidArgument(s)) return Fail(s, 2);
  if (!s.ok()) return Fail(s, 1);
  std::cerr << "monsoon: job '" << config->job << "': " << config->cluster.servers << " server(s), "
            << config->cluster.workers << " worker(s)"
            << (config->cluster.evaluator ? ", 1 evaluator" : "") << "; run directory "
            << run_dir.root << std::endl;
  LocalJobOptions options;
  options.self_exe = SelfExe();
  return RunJobHere(*config, run_dir, options);
}

int CmdCompare(const Args& args) {
  auto study = LoadStudy(args.positional[0]);
  if (!study.ok()) return Fail(study.status(), 2);
  const std::string out =
      args.Get("--out") != nullptr
          ? *args.Get("--out")
          : absl::StrCat("runs/", study->name, "/",
                         absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return Fail(absl::PermissionDeniedError(absl::StrCat("cannot create ", out)), 1);
  LocalJobOptions options;
  options.self_exe = SelfExe();
  std::vector<VariantResult> results;
  int failed = 0;
  const size_t n = study->variants.size();
  for (size_t i = 0; i < n; ++i) {
    const StudyVariant& v = study->variants[i];
    for (const std::string& w : JobConfigWarnings(v.config)) {
      std::cerr << "monsoon: warning: variant '" << v.name << "': " << w << std::endl;
    }
    std::cerr << "monsoon: [" << i + 1 << "/" << n << "] " << v.name << ": "
              << kAlgorithmNames.Name(v.config.training.algorithm) << ", " << VariantKnobs(v.config)
              << std::endl;
    const RunDir run_dir{absl::StrCat(out, "/", v.name)};
    absl::Status s = PrepareRunDir(v.config, run_dir);
    if (absl::IsAlreadyExists(s)) return Fail(s, 2);
    if (s.ok()) s = RunLocalJob(v.config, run_dir, options, &g_stop).status();
    if (absl::IsCancelled(s)) return Fail(s, 130);
    absl::StatusOr<VariantResult> result =
        s.ok() ? ReadVariantResult(v, run_dir, study->target_accuracy) : s;
    if (!result.ok()) {
      std::cerr << "monsoon: variant '" << v.name << "' failed: " << result.status().message()
                << std::endl;
      ++failed;
      VariantResult failure;
      failure.name = v.name;
      failure.algorithm = kAlgorithmNames.Name(v.config.training.algorithm);
      failure.knobs = VariantKnobs(v.config);
      failure.status = std::string(result.status().message());
      results.push_back(failure);
      continue;
    }
    std::cerr << "monsoon: " << v.name << ": final test "
              << (study->classification ? "accuracy " : "loss ")
              << (study->classification ? result->final_accuracy : result->final_loss) << " after "
              << result->wall_seconds << " s" << std::endl;
    results.push_back(*std::move(result));
  }
  const absl::Status written = WriteComparison(*study, results, out);
  if (!written.ok()) return Fail(written, 1);
  std::cerr << "monsoon: compared " << n << " variants (" << failed << " failed): " << out
            << "/compare.{csv,md,svg}" << std::endl;
  return failed == 0 ? 0 : 1;
}

int CmdValidate(const Args& args) {
  auto config = LoadUserConfig(args);
  if (!config.ok()) return Fail(config.status(), 2);
  std::cout << JobConfigToYaml(*config);
  return 0;
}

int CmdDevices(const Args&) {
  auto devices = ListCudaDevices();
  if (!devices.ok()) {
    std::cout << "cuda: none (" << devices.status().message() << ")" << std::endl;
    return 1;
  }
  for (const std::string& d : *devices) std::cout << d << std::endl;
  return 0;
}

int CmdGenLinear(const Args& args) {
  const std::string* out = args.Get("--out");
  if (out == nullptr) return Fail(absl::InvalidArgumentError("gen-linear needs --out FILE"), 2);
  LinearDataSpec spec;
  const std::pair<const char*, double*> reals[] = {{"--slope", &spec.slope},
                                                   {"--intercept", &spec.intercept},
                                                   {"--noise", &spec.noise},
                                                   {"--x-min", &spec.x_min},
                                                   {"--x-max", &spec.x_max}};
  for (const auto& [name, field] : reals) {
    const std::string* v = args.Get(name);
    if (v != nullptr && !absl::SimpleAtod(*v, field)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(name, " needs a number")), 2);
    }
  }
  if (args.Get("--rows") != nullptr) {
    auto rows = IntFlag(args, "--rows");
    if (!rows.ok() || *rows == 0)
      return Fail(absl::InvalidArgumentError("--rows needs a positive integer"), 2);
    spec.rows = *rows;
  }
  if (args.Get("--seed") != nullptr) {
    auto seed = IntFlag(args, "--seed");
    if (!seed.ok()) return Fail(seed.status(), 2);
    spec.seed = *seed;
  }
  const absl::Status s = WriteCsvDataset(GenerateLinearDataset(spec), *out);
  return s.ok() ? 0 : Fail(s, 1);
}

// Runs one role of a prepared job; the exit status of the process. `gpu` is the CUDA device
// for workers and the evaluator (< 0: none).
int RunRole(const RoleAssignment& role, const JobConfig& config, const RunDir& run_dir,
            const std::string& bind_host, int gpu, bool resume) {
  absl::Status s;
  switch (role.kind) {
    case RoleKind::kServer: {
      ServerRoleOptions options;
      options.index = role.index;
      options.bind_host = bind_host;
      options.resume = resume;
      s = RunServerRole(config, run_dir, options, &g_stop);
      break;
    }
    case RoleKind::kWorker:
      s = RunWorkerRole(config, run_dir, role.index, gpu, &g_stop);
      break;
    case RoleKind::kEvaluator:
      s = RunEvaluatorRole(config, run_dir, gpu, &g_stop);
      break;
    case RoleKind::kIdle:
      std::cerr << "monsoon: this task has no role in the job; exiting" << std::endl;
      return 0;
  }
  // After a stop signal (SIGTERM, SLURM's SIGUSR1, Ctrl-C) every role shuts down, so a role's
  // calls to its peers (connecting, pulling, pushing, evaluating) fail: report the stop, with
  // what the role ran into. The roles themselves only return Cancelled for a stop they saw.
  if (!s.ok() && !absl::IsCancelled(s) && g_stop.load()) {
    s = absl::CancelledError(
        absl::StrCat(role.Describe(), " stopped by signal; after it: ", s.message()));
  }
  if (absl::IsCancelled(s)) return Fail(s, 130);
  return s.ok() ? 0 : Fail(s, 1);
}

// `monsoon server|worker|evaluator --run-dir DIR [--index N] [--bind HOST] [--gpu G]`.
int CmdRole(const std::string& name, const Args& args) {
  auto run_dir = RunDirFlag(args);
  if (!run_dir.ok()) return Fail(run_dir.status(), 2);
  auto config = RoleConfig(*run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  RoleAssignment role{RoleKind::kEvaluator, 0};
  if (name != "evaluator") {
    auto index = IntFlag(args, "--index");
    if (!index.ok()) return Fail(index.status(), 2);
    const int limit = name == "server" ? config->cluster.servers : config->cluster.workers;
    if (*index >= limit) {
      return Fail(absl::InvalidArgumentError(
                      absl::StrCat("--index ", *index, ": this job has ", limit, " ", name, "s")),
                  2);
    }
    role = {name == "server" ? RoleKind::kServer : RoleKind::kWorker, *index};
  }
  int gpu = 0;
  if (args.Get("--gpu") != nullptr) {
    auto flag = IntFlag(args, "--gpu");
    if (!flag.ok()) return Fail(flag.status(), 2);
    gpu = *flag;
  }
  const std::string* bind = args.Get("--bind");
  return RunRole(role, *config, *run_dir, bind != nullptr ? *bind : "127.0.0.1", gpu,
                 args.Get("--resume") != nullptr);
}

int CmdPrepare(const Args& args) {
  if (args.Get("--resume") != nullptr) {
    auto run_dir = RunDirFlag(args);
    if (!run_dir.ok()) return Fail(run_dir.status(), 2);
    const absl::Status s = PrepareResume(*run_dir);
    if (!s.ok()) return Fail(s, 2);
    std::cerr << "monsoon: " << run_dir->root << " is ready to resume" << std::endl;
    return 0;
  }
  auto run_dir = RunDirFlag(args);
  if (!run_dir.ok()) return Fail(run_dir.status(), 2);
  auto config = LoadUserConfig(args);
  if (!config.ok()) return Fail(config.status(), 2);
  const absl::Status s = PrepareRunDir(*config, *run_dir);
  if (!s.ok()) return Fail(s, absl::IsAlreadyExists(s) ? 2 : 1);
  std::cerr << "monsoon: prepared " << run_dir->root << " for job '" << config->job << "'"
            << std::endl;
  return 0;
}

int CmdLaunch(const Args& args) {
  auto task = DetectTaskEnvironment(CurrentEnvironment());
  if (!task.ok()) return Fail(task.status(), 2);
  if (task->source == LaunchSource::kLocal) {  // plain local mode
    if (args.Get("--resume") == nullptr) {
      if (args.positional.empty()) {
        return Fail(absl::InvalidArgumentError(
                        "launch outside srun or mpirun runs the whole job on this machine, as "
                        "`run`, and needs a CONFIG.yaml"),
                    2);
      }
      return CmdRun(args);
    }
    auto run_dir = RunDirFlag(args);
    if (!run_dir.ok()) return Fail(run_dir.status(), 2);
    return CmdResume(*run_dir);
  }
  auto run_dir = RunDirFlag(args);
  if (!run_dir.ok()) return Fail(run_dir.status(), 2);
  if (args.positional.size() == 1) {
    // Every task validates the config; task 0 prepares the run directory, the others wait.
    auto config = LoadUserConfig(args);
    if (!config.ok()) return task->rank == 0 ? Fail(config.status(), 2) : 2;
    if (task->rank == 0) {
      const absl::Status s = PrepareRunDir(*config, *run_dir);
      if (!s.ok()) return Fail(s, 2);
    } else {
      const absl::Time deadline =
          absl::Now() + absl::Seconds(config->transport.rendezvous_timeout_seconds);
      while (access(run_dir->config_path().c_str(), F_OK) != 0) {
        if (g_stop.load()) return 130;
        if (absl::Now() > deadline) {
          return Fail(absl::DeadlineExceededError(
                          absl::StrCat("task 0 did not prepare ", run_dir->root, " within ",
                                       config->transport.rendezvous_timeout_seconds, " s")),
                      1);
        }
        absl::SleepFor(absl::Milliseconds(100));
      }
    }
  }
  auto config = RoleConfig(*run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  auto role = AssignRole(config->cluster, *task);
  if (!role.ok()) {
    // Every task reaches the same verdict; one line from task 0 is enough.
    return task->rank == 0 ? Fail(role.status(), 2) : 2;
  }
  std::string bind_host;
  if (role->kind == RoleKind::kServer) {
    auto address = ServerBindAddress(config->network);
    if (!address.ok()) return Fail(address.status(), 2);
    bind_host = *address;
    if (bind_host.rfind("127.", 0) == 0 && task->nodes.size() > 1) {
      // Debian maps the host name to 127.0.1.1 in /etc/hosts, for one.
      std::cerr << "monsoon: warning: this server binds " << bind_host
                << ", a loopback address other nodes cannot reach; set network.interface "
                   "(e.g. eth0, ib0) for jobs across nodes"
                << std::endl;
    }
  }
  std::cerr << "monsoon: " << task->Describe() << " -> " << role->Describe() << std::endl;
  return RunRole(*role, *config, *run_dir, bind_host, task->gpu.value_or(-1),
                 args.Get("--resume") != nullptr);
}

int CmdSummarize(const Args& args) {
  auto run_dir = RunDirFlag(args);
  if (!run_dir.ok()) return Fail(run_dir.status(), 2);
  auto config = RoleConfig(*run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  auto wall = SecondsSincePrepared(*run_dir);
  if (!wall.ok()) return Fail(wall.status(), 1);
  const absl::StatusOr<JobProgress> result = WriteSummary(*config, *run_dir, *wall);
  if (!result.ok()) return Fail(result.status(), 1);
  PrintResult(*config, *run_dir, *result);
  return 0;
}

// Seconds since `path` was last written; nullopt when it does not exist.
std::optional<double> SecondsSinceWritten(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return absl::ToDoubleSeconds(absl::Now() - absl::TimeFromTimespec(st.st_mtim));
}

// `monsoon status`: where a run stands, from its run directory and a Stats call to each
// published server address: progress, finished or running or stopped, and the summary.
int CmdStatus(const Args& args) {
  auto run_dir = RunDirFlag(args);
  if (!run_dir.ok()) return Fail(run_dir.status(), 2);
  auto config = RoleConfig(*run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  auto secrets = ReadJobSecrets(*run_dir, config->security);
  if (!secrets.ok()) return Fail(secrets.status(), 2);
  std::cout << "job " << config->job << " (" << kAlgorithmNames.Name(config->training.algorithm)
            << ", " << config->cluster.servers << " server(s), " << config->cluster.workers
            << " worker(s)): " << ProgressLine(*config, ReadProgress(*config, *run_dir)) << "\n";
  // "server J at ADDRESS: ..." for each of this job's servers that answers; a process of
  // another job on a reused port refuses the token, so it does not count.
  std::vector<std::string> serving;
  std::optional<double> silent;  // seconds since the newest server metrics row
  for (int j = 0; j < config->cluster.servers; ++j) {
    const auto address = ReadServerAddress(*run_dir, j);
    if (address.ok()) {
      const auto stats = QueryServerStats(*address, *secrets, absl::Seconds(1));
      if (stats.ok() && stats->server_index == j) {
        serving.push_back(absl::StrFormat(
            "server %d at %s: %d of %d workers finished, %d lost, %d pushes applied", j, *address,
            stats->workers_finished, stats->workers_expected, stats->workers_lost.size(),
            stats->pushes_applied));
      }
    }
    const auto age = SecondsSinceWritten(run_dir->server_metrics_path(j));
    if (age.has_value() && (!silent.has_value() || *age < *silent)) silent = age;
  }
  const absl::Status finished = TrainingFinished(*config, *run_dir);
  if (finished.ok()) {
    std::cout << "training finished\n";
  } else if (!serving.empty()) {
    std::cout << "training running (" << absl::StrJoin(serving, "; ") << ")\n";
  } else {
    std::cout << finished.message()
              << (silent.has_value()
                      ? absl::StrFormat(
                            " (no server is running; they last wrote metrics %.0f s ago)", *silent)
                      : "")
              << "\n";
  }
  const bool summarized = std::filesystem::exists(run_dir->summary_path());
  std::cout << (summarized
                    ? "summary: " + run_dir->summary_path()
                    : std::string("no summary yet") +
                          (finished.ok() ? ": monsoon summarize --run-dir " + run_dir->root : ""))
            << std::endl;
  return finished.ok() ? 0 : 1;
}

// Runs `argv` (searched on PATH) and returns its exit status.
absl::StatusOr<int> RunProgram(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::ResourceExhaustedError("fork failed");
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError("waitpid failed");
    if (g_stop.load()) kill(pid, SIGTERM);  // Ctrl-C while waiting: let sbatch --wait end
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return absl::NotFoundError(absl::StrCat(argv[0], " not found on PATH"));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int CmdSbatch(const Args& args) {
  const bool submit = args.Get("--submit") != nullptr;
  const bool wait = args.Get("--wait") != nullptr;
  if (wait && !submit) return Fail(absl::InvalidArgumentError("--wait needs --submit"), 2);
  auto config = LoadUserConfig(args);
  if (!config.ok()) return Fail(config.status(), 2);
  std::error_code ec;
  const std::string runs_dir =
      std::filesystem::absolute(absl::StrCat("runs/", config->job)).lexically_normal().string();
  if (runs_dir.find_first_of("\n\r") != std::string::npos) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
                    "the runs directory ", absl::CEscape(runs_dir),
                    " holds a line break, which an #SBATCH line cannot; run from another one")),
                2);
  }
  std::filesystem::create_directories(runs_dir, ec);
  if (ec) return Fail(absl::PermissionDeniedError(absl::StrCat("cannot create ", runs_dir)), 1);
  SbatchInputs inputs;
  inputs.monsoon_exe = SelfExe();
  inputs.config_path = std::filesystem::absolute(args.positional[0]).lexically_normal().string();
  inputs.overrides = args.sets;
  inputs.runs_dir = runs_dir;
  const std::string script = SbatchScript(*config, inputs);
  const std::string* script_flag = args.Get("--script");
  const std::string path =
      script_flag != nullptr
          ? *script_flag
          : absl::StrCat(runs_dir, "/", config->job, "-",
                         absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()),
                         ".sbatch");
  const absl::Status written = WriteFileAtomically(path, script, 0755);
  if (!written.ok()) return Fail(written, 1);
  std::cout << script << std::flush;
  std::cerr << "monsoon: wrote " << path << std::endl;
  if (!submit) return 0;
  std::vector<std::string> sbatch = {"sbatch"};
  if (wait) sbatch.push_back("--wait");
  sbatch.push_back(path);
  auto status = RunProgram(sbatch);
  if (!status.ok()) return Fail(status.status(), 1);
  if (*status != 0) std::cerr << "monsoon: sbatch exited with status " << *status << std::endl;
  return *status;
}

int Main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  InstallSignalHandlers();
  ApplyProcessSettings();
  const Command commands[] = {
      {"run", {"--run-dir", "--resume", "--set"}, {}, Operand::kFile, "CONFIG.yaml", CmdRun},
      {"compare", {"--out"}, {}, Operand::kFile, "STUDY.yaml", CmdCompare},
      {"validate", {"--set"}, {}, Operand::kFile, "CONFIG.yaml", CmdValidate},
      {"sbatch",
       {"--script", "--set"},
       {"--submit", "--wait"},
       Operand::kFile,
       "CONFIG.yaml",
       CmdSbatch},
      {"launch", {"--run-dir", "--set"}, {"--resume"}, Operand::kOptionalFile, "CONFIG.yaml",
       CmdLaunch},
      {"prepare", {"--run-dir", "--set"}, {"--resume"}, Operand::kFile, "CONFIG.yaml",
       CmdPrepare},
      {"summarize", {"--run-dir"}, {}, Operand::kNone, "", CmdSummarize},
      {"status", {"--run-dir"}, {}, Operand::kNone, "", CmdStatus},
      {"devices", {}, {}, Operand::kNone, "", CmdDevices},
      {"gen-linear",
       {"--out", "--slope", "--intercept", "--noise", "--rows", "--seed", "--x-min", "--x-max"},
       {},
       Operand::kNone,
       "",
       CmdGenLinear},
      {"server",
       {"--run-dir", "--index", "--bind"},
       {"--resume"},
       Operand::kNone,
       "",
       [](const Args& args) { return CmdRole("server", args); }},
      {"worker",
       {"--run-dir", "--index", "--gpu"},
       {},
       Operand::kNone,
       "",
       [](const Args& args) { return CmdRole("worker", args); }},
      {"evaluator",
       {"--run-dir", "--gpu"},
       {},
       Operand::kNone,
       "",
       [](const Args& args) { return CmdRole("evaluator", args); }},
  };
  const std::string name = argv[1];
  for (const Command& command : commands) {
    if (command.name != name) continue;
    auto args = ParseArgs(argc, argv, 2, command);
    if (!args.ok()) return Fail(args.status(), 2);
    return command.run(*args);
  }
  std::cerr << "monsoon: unknown command '" << name << "'\n\n" << kUsage;
  return 2;
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
