#include "launcher/local/worker_program.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/file_util.h"
#include "core/process/process_setup.h"
#include "core/status_macros.h"
#include "launcher/local/process_group.h"
#include "worker/program_environment.h"

namespace monsoon {
namespace {

namespace fs = std::filesystem;

// Sets the variables a run of the worker program gets: `env`, with the package on PYTHONPATH.
absl::Status SetProgramEnvironment(const ProgramEnvironment& env) {
  MONSOON_ASSIGN_OR_RETURN(const std::string package, MonsoonPythonPath());
  const char* old = std::getenv("PYTHONPATH");
  const std::string python_path =
      old == nullptr || *old == '\0' ? package : absl::StrCat(package, ":", old);
  setenv("PYTHONPATH", python_path.c_str(), 1);
  for (const auto& [name, value] : env.ToEnv()) setenv(name.c_str(), value.c_str(), 1);
  return absl::OkStatus();
}

// The environment of the worker program of `run_dir`'s job, as `role`.
ProgramEnvironment EnvironmentOf(const JobConfig& config, const RunDir& run_dir,
                                 ProgramRole role) {
  ProgramEnvironment env;
  env.role = role;
  std::error_code ec;
  env.run_dir = fs::absolute(run_dir.root, ec).string();
  env.seed = config.seed;
  return env;
}

// `name` as exec can run it: itself when it holds a slash, else the first executable of that
// name on PATH.
absl::StatusOr<std::string> FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (const absl::string_view dir : absl::StrSplit(path == nullptr ? "" : path, ':')) {
    const std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat("cluster.worker_program: ", name, " is not on PATH"));
}

// The Python module a failed worker program's log says it could not import, or "".
std::string MissingModule(const std::string& log) {
  const absl::StatusOr<std::string> text = ReadFile(log);
  std::smatch match;
  static const std::regex missing("ModuleNotFoundError: No module named '([^']+)'");
  if (!text.ok() || !std::regex_search(*text, match, missing)) return "";
  return match[1];
}

// "Python 3.11.2" for the interpreter at `path`, or "" when it does not say within 10 s.
std::string PythonVersion(const std::string& path) {
  const std::string quoted = absl::StrCat("'", absl::StrReplaceAll(path, {{"'", "'\\''"}}), "'");
  std::FILE* out = popen(absl::StrCat("timeout 10 ", quoted,
                                      " -c 'import sys; print(sys.version.split()[0])' 2>/dev/null")
                             .c_str(),
                         "r");
  if (out == nullptr) return "";
  char line[64] = {};
  const bool read = std::fgets(line, sizeof(line), out) != nullptr;
  pclose(out);
  const std::string version = read ? std::string(absl::StripAsciiWhitespace(line)) : "";
  return version.empty() ? "" : absl::StrCat("Python ", version);
}

// Why the init run failed, for a Python interpreter that lacks a module the program imports:
// one line naming the interpreter, its version and the module. "" for other failures.
std::string MissingModuleCause(const std::string& interpreter, const std::string& log) {
  const std::string module = MissingModule(log);
  if (module.empty() || !absl::StartsWith(fs::path(interpreter).filename().string(), "python")) {
    return "";
  }
  const std::string version = PythonVersion(interpreter);
  return absl::StrCat("cluster.worker_program: its interpreter ", interpreter,
                      version.empty() ? "" : absl::StrCat(" (", version, ")"), " cannot import ",
                      module, ": install it for that interpreter, or name one that has it (a "
                      "venv's bin/python, say) in cluster.worker_program. ");
}

}  // namespace

absl::StatusOr<std::string> MonsoonPythonPath() {
  if (const char* set = std::getenv("MONSOON_PYTHONPATH"); set != nullptr && *set != '\0') {
    return std::string(set);
  }
  const fs::path exe = SelfExePath();
  std::vector<fs::path> candidates = {fs::path(exe.string() + ".runfiles/monsoon/python"),
                                      exe.parent_path() / "python"};
  // A `bazel test` or `bazel run` whose target carries the package: Bazel builds the binary's
  // own runfiles tree only at the end of the build, after tests may have started.
  if (const char* runfiles = std::getenv("RUNFILES_DIR"); runfiles != nullptr && *runfiles) {
    candidates.push_back(fs::path(runfiles) / "monsoon" / "python");
  }
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "monsoon" / "_monsoon.so", ec)) return dir.string();
  }
  return absl::NotFoundError(
      absl::StrCat("the monsoon Python package is not beside ", exe.string(),
                   " (build it with `bazel build //launcher:monsoon`, or set MONSOON_PYTHONPATH)"));
}

absl::Status ExecWorkerProgram(const JobConfig& config, const RunDir& run_dir,
                               const RoleId& role, int gpu) {
  const std::vector<std::string>& program = config.cluster.worker_program;
  ProgramEnvironment env = EnvironmentOf(
      config, run_dir,
      role.kind == RoleKind::kWorker ? ProgramRole::kWorker : ProgramRole::kEvaluator);
  env.index = role.index;
  env.gpu = gpu;
  MONSOON_RETURN_IF_ERROR(SetProgramEnvironment(env));
  std::vector<char*> args;
  for (const std::string& a : program) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  return absl::NotFoundError(
      absl::StrCat("cluster.worker_program: cannot run ", program[0], ": ", std::strerror(errno)));
}

absl::Status RunWorkerProgramInit(JobConfig* job, const RunDir& run_dir,
                                  const std::atomic<bool>* stop) {
  const JobConfig& config = *job;
  std::vector<std::string> argv = config.cluster.worker_program;
  MONSOON_ASSIGN_OR_RETURN(argv[0], FindProgram(argv[0]));
  const ProgramEnvironment env = EnvironmentOf(config, run_dir, ProgramRole::kInit);
  MONSOON_RETURN_IF_ERROR(SetProgramEnvironment(env));
  const std::string log = absl::StrCat(run_dir.logs_dir(), "/init.log");
  ProcessGroup program;
  MONSOON_RETURN_IF_ERROR(program.Start("init", argv, log));
  for (const auto& variable : env.ToEnv()) unsetenv(variable.first.c_str());
  const absl::Time deadline =
      absl::Now() + absl::Seconds(config.transport.rendezvous_timeout_seconds);
  std::vector<ChildExit> exits;
  while ((exits = program.Reap()).empty()) {
    if (stop != nullptr && stop->load()) {
      return absl::CancelledError("stopped by signal while the worker program started");
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("cluster.worker_program did not write its initial weights within "
                       "transport.rendezvous_timeout_seconds (",
                       config.transport.rendezvous_timeout_seconds, " s). ", LogExcerpt(log)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::string path = run_dir.initial_params_path();
  struct stat st;
  if (!exits[0].ok() || stat(path.c_str(), &st) != 0) {
    const std::string cause = MissingModuleCause(argv[0], log);
    if (!cause.empty()) return absl::FailedPreconditionError(cause + LogExcerpt(log));
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.worker_program ", exits[0].ok() ? "wrote no initial weights" : exits[0].Describe(),
        " when started to write its model's initial weights (MONSOON_ROLE=init). ",
        LogExcerpt(log)));
  }
  job->model.num_params = static_cast<int>(st.st_size / sizeof(float));
  job->model.num_state = 0;
  if (access(run_dir.initial_state_size_path().c_str(), F_OK) != 0) return absl::OkStatus();
  MONSOON_ASSIGN_OR_RETURN(const std::string size, ReadFile(run_dir.initial_state_size_path()));
  if (!absl::SimpleAtoi(size, &job->model.num_state) || job->model.num_state < 0 ||
      job->model.num_state >= job->model.num_params) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.worker_program wrote ", job->model.num_params, " initial values of which '",
        size, "' are state: not a count below that"));
  }
  return absl::OkStatus();
}

}  // namespace monsoon
