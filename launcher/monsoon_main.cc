// The `monsoon` command line: runs jobs and, as child processes, their roles.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/dataset.h"
#include "core/job_config.h"
#include "core/process_setup.h"
#include "core/run_dir.h"
#include "launcher/local_job.h"
#include "launcher/summary.h"
#include "server/server_role.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

// Set by SIGINT/SIGTERM; polled by the job and role loops.
std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

constexpr char kUsage[] = R"(usage: monsoon <command> [options]

commands:
  run CONFIG.yaml [--run-dir DIR] [--set key=value ...]
        run a whole job on this machine: servers, workers and evaluator as child
        processes on loopback; writes the run directory (default runs/JOB/TIMESTAMP)
  validate CONFIG.yaml [--set key=value ...]
        check a config and print it fully resolved
  gen-linear --out FILE [--slope M] [--intercept B] [--noise S] [--rows N] [--seed K]
             [--x-min A] [--x-max B]
        write a synthetic linear-regression CSV (y = M x + B + noise)

role commands (started by `monsoon run`; the run directory holds config.yaml and token):
  server --run-dir DIR --index J [--bind HOST]
  worker --run-dir DIR --index I
  evaluator --run-dir DIR
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

absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first,
                               const std::vector<std::string>& allowed) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      args.positional.push_back(a);
      continue;
    }
    std::string value;
    const size_t eq = a.find('=');
    if (eq != std::string::npos && a.rfind("--set", 0) != 0) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (a.rfind("--set=", 0) == 0) {
      value = a.substr(6);
      a = "--set";
    } else {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(a, " needs a value"));
      value = argv[++i];
    }
    if (a == "--set") {
      args.sets.push_back(value);
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), a) == allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option ", a));
    }
    args.flags.emplace_back(a, value);
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

int CmdRun(const Args& args) {
  if (args.positional.size() != 1)
    return Fail(absl::InvalidArgumentError("run needs one CONFIG.yaml"), 2);
  auto config = LoadJobConfig(args.positional[0], args.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  RunDir run_dir;
  if (const std::string* d = args.Get("--run-dir")) {
    run_dir.root = *d;
  } else {
    run_dir.root =
        absl::StrCat("runs/", config->job, "/",
                     absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
  }
  if (access(run_dir.config_path().c_str(), F_OK) == 0) {
    return Fail(absl::AlreadyExistsError(absl::StrCat(
                    "run directory ", run_dir.root,
                    " already holds a run (config.yaml exists); choose a new --run-dir")),
                2);
  }
  absl::Status s = run_dir.Create();
  if (s.ok()) s = WriteFileAtomically(run_dir.config_path(), JobConfigToYaml(*config));
  if (s.ok()) s = CreateJobToken(run_dir).status();
  if (!s.ok()) return Fail(s, 1);
  std::cerr << "monsoon: job '" << config->job << "': " << config->cluster.servers << " server(s), "
            << config->cluster.workers << " worker(s)"
            << (config->cluster.evaluator ? ", 1 evaluator" : "") << "; run directory "
            << run_dir.root << std::endl;
  LocalJobOptions options;
  options.self_exe = SelfExe();
  s = RunLocalJob(*config, run_dir, options, &g_stop);
  if (absl::IsCancelled(s)) return Fail(s, 130);
  if (!s.ok()) return Fail(s, 1);
  const JobProgress p = ReadProgress(*config, run_dir);
  std::cerr << "monsoon: done; ";
  if (p.has_eval && config->model.loss == LossType::kSoftmaxCrossEntropy) {
    std::cerr << "final test accuracy " << p.test_accuracy << ", ";
  }
  if (p.has_eval) std::cerr << "final test loss " << p.test_loss << "; ";
  std::cerr << "summary in " << run_dir.summary_path() << std::endl;
  return 0;
}

int CmdValidate(const Args& args) {
  if (args.positional.size() != 1) {
    return Fail(absl::InvalidArgumentError("validate needs one CONFIG.yaml"), 2);
  }
  auto config = LoadJobConfig(args.positional[0], args.sets);
  if (!config.ok()) return Fail(config.status(), 2);
  std::cout << JobConfigToYaml(*config);
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

// Loads the resolved config every role reads from its run directory.
absl::StatusOr<JobConfig> RoleConfig(const RunDir& run_dir) {
  return LoadJobConfig(run_dir.config_path());
}

int CmdRole(const std::string& role, const Args& args) {
  auto run_dir = RunDirFlag(args);
  if (!run_dir.ok()) return Fail(run_dir.status(), 2);
  auto config = RoleConfig(*run_dir);
  if (!config.ok()) return Fail(config.status(), 2);
  absl::Status s;
  if (role == "evaluator") {
    s = RunEvaluatorRole(*config, *run_dir, &g_stop);
  } else {
    auto index = IntFlag(args, "--index");
    if (!index.ok()) return Fail(index.status(), 2);
    const int limit = role == "server" ? config->cluster.servers : config->cluster.workers;
    if (*index >= limit) {
      return Fail(absl::InvalidArgumentError(
                      absl::StrCat("--index ", *index, ": this job has ", limit, " ", role, "s")),
                  2);
    }
    if (role == "server") {
      ServerRoleOptions options;
      options.index = *index;
      if (const std::string* bind = args.Get("--bind")) options.bind_host = *bind;
      s = RunServerRole(*config, *run_dir, options, &g_stop);
    } else {
      s = RunWorkerRole(*config, *run_dir, *index, &g_stop);
    }
  }
  if (absl::IsCancelled(s)) return Fail(s, 130);
  return s.ok() ? 0 : Fail(s, 1);
}

int Main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  InstallSignalHandlers();
  TuneAllocatorForLargeMessages();
  const std::string cmd = argv[1];
  std::vector<std::string> allowed;
  if (cmd == "run") allowed = {"--run-dir"};
  if (cmd == "gen-linear") {
    allowed = {"--out",  "--slope", "--intercept", "--noise",
               "--rows", "--seed",  "--x-min",     "--x-max"};
  }
  if (cmd == "server") allowed = {"--run-dir", "--index", "--bind"};
  if (cmd == "worker") allowed = {"--run-dir", "--index"};
  if (cmd == "evaluator") allowed = {"--run-dir"};
  auto args = ParseArgs(argc, argv, 2, allowed);
  if (!args.ok()) return Fail(args.status(), 2);
  if (cmd == "run") return CmdRun(*args);
  if (cmd == "validate") return CmdValidate(*args);
  if (cmd == "gen-linear") return CmdGenLinear(*args);
  if (cmd == "server" || cmd == "worker" || cmd == "evaluator") return CmdRole(cmd, *args);
  std::cerr << "monsoon: unknown command '" << cmd << "'\n\n" << kUsage;
  return 2;
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
