#include "launcher/local/process_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace monsoon {

namespace {

// The last `lines` lines of a text file.
std::string TailOfFile(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  return absl::StrJoin(tail, "\n");
}

// Signals a process only gets from outside: a stop signal from a person, the launcher or
// SLURM, SIGKILL (also the kernel's OOM killer), and SIGALRM, which ends a process that
// outlived its deadline after a stop signal.
bool IsStopSignal(int signal) {
  if (signal == SIGKILL || signal == SIGALRM) return true;
  return std::find(std::begin(kStopSignals), std::end(kStopSignals), signal) !=
         std::end(kStopSignals);
}

// A child's exit record file: its log's, ".log" replaced by ".exit".
std::string RecordPathOf(const std::string& log_path) {
  return absl::StrCat(absl::StripSuffix(log_path, ".log"), ".exit");
}

// This process's environment, with MONSOON_EXIT_RECORD set to `record_path` and
// MONSOON_PROCESS_TREE to `tree_tag`.
std::vector<std::string> EnvironmentWith(const std::string& record_path,
                                         const std::string& tree_tag) {
  std::vector<std::string> env;
  const std::string record = absl::StrCat(kExitRecordVariable, "=");
  const std::string tree = absl::StrCat(kProcessTreeVariable, "=");
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, record) && !absl::StartsWith(*e, tree)) env.push_back(*e);
  }
  env.push_back(record + record_path);
  env.push_back(tree + tree_tag);
  return env;
}

// A tag no other start of a role shares: this launcher's pid, the time and the role's name.
std::string NewTreeTag(const std::string& name) {
  return absl::StrCat(getpid(), "-", absl::ToUnixNanos(absl::Now()), "-", name);
}

// How a child that ended with wait status `status` ended, with its tree's exit record.
ChildExit ExitOf(const std::string& name, const std::string& log_path, const ProcessTree& tree,
                 int status) {
  ChildExit e{name, log_path, 0, 0, std::nullopt};
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  e.record = ReadExitRecord(RecordPathOf(log_path));
  if (e.record.has_value() && e.record->tree != tree.tag) e.record.reset();
  return e;
}

}  // namespace

// Monsoon's own exit statuses (0, 3, 4, 130) count with a record of the same role's process
// tree saying so; without one (or with another status) an exit is the process's own failure,
// and so is a SIGINT it got without recording a stop (Python's uncaught KeyboardInterrupt ends
// that way), and a stall recorded in other words than a stall watch's. A role that recorded a
// failure failed, however it then ended. A role finishes by recording so: its role runner
// does, or a program's Client.finish() (the launcher then asks the servers, local_job.cc).
ObservedExitKind ChildExit::kind() const {
  if (record.has_value() &&
      (record->cause == RecordedExitCause::kFailed || record->cause == RecordedExitCause::kDiverged)) {
    return ObservedExitKind::kFailed;
  }
  if (signal != 0) {
    if (signal == SIGINT && !record.has_value()) return ObservedExitKind::kFailed;
    return IsStopSignal(signal) ? ObservedExitKind::kStopped : ObservedExitKind::kCrashed;
  }
  if (!record.has_value() || record->status != exit_code) return ObservedExitKind::kFailed;
  switch (record->cause) {
    case RecordedExitCause::kStopped:
      return ObservedExitKind::kStopped;
    case RecordedExitCause::kStalled:  // a stall watch names the role; other words are a claim
      return absl::StartsWith(record->message, absl::StrCat(name, " made no progress for "))
                 ? ObservedExitKind::kStalled
                 : ObservedExitKind::kFailed;
    case RecordedExitCause::kFinished:
      return exit_code == 0 ? ObservedExitKind::kFinished : ObservedExitKind::kFailed;
    case RecordedExitCause::kServerUnreachable:
    case RecordedExitCause::kFailed:
    case RecordedExitCause::kDiverged:
      break;
  }
  return ObservedExitKind::kFailed;
}

std::string ChildExit::Describe() const {
  switch (kind()) {
    case ObservedExitKind::kFinished:
      break;
    case ObservedExitKind::kStopped:
      if (signal == 0) return absl::StrCat(name, " was stopped by a signal");
      return absl::StrCat(name, " was killed by signal ", signal, " (", strsignal(signal), ")");
    case ObservedExitKind::kCrashed:
      return absl::StrCat(name, " crashed with signal ", signal, " (", strsignal(signal), ")");
    case ObservedExitKind::kStalled:
      return record->message;
    case ObservedExitKind::kFailed:
      return DescribeFailure();
  }
  return absl::StrCat(name, " finished");
}

std::string ChildExit::DescribeFailure() const {
  if (!record.has_value() || (signal == 0 && record->status != exit_code)) {
    if (signal != 0) {
      return absl::StrCat(name, " ended by signal ", signal, " (", strsignal(signal),
                          ") of its own (an uncaught KeyboardInterrupt in Python ends so)");
    }
    if (exit_code == 0) {
      return absl::StrCat(name, " exited with status 0 before its role had finished (its "
                                "program returned without completing monsoon.torch.run, "
                                "monsoon.run_role or Client.finish())");
    }
    return absl::StrCat(name, " exited with status ", exit_code, " of its own (not Monsoon's)",
                        exit_code == 127 ? ": a command not found?" : "");
  }
  if (record->cause == RecordedExitCause::kStalled) {
    return absl::StrCat(name, " exited with status ", exit_code,
                        " and an exit record of a stall in words of its own (\"",
                        absl::string_view(record->message).substr(0, record->message.find('\n')),
                        "\"): the program's own claim");
  }
  if (record->cause == RecordedExitCause::kServerUnreachable) {
    return absl::StrCat(name, " stopped because a server did not answer it (exit status ",
                        exit_code, ")");
  }
  if (signal != 0) {
    return absl::StrCat(name, " failed (", record->message, ") and was ended by signal ", signal);
  }
  const absl::string_view cause = absl::string_view(record->message).substr(
      0, record->message.find('\n'));
  if (cause.empty()) return absl::StrCat(name, " exited with status ", exit_code);
  return absl::StrCat(name, " failed: ", cause);
}

ProcessGroup::~ProcessGroup() { StopAll(absl::Seconds(2)); }

absl::Status ProcessGroup::Start(const std::string& name, const std::vector<std::string>& argv,
                                 const std::string& log_path) {
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", log_path, ": ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string record_path = RecordPathOf(log_path);
  unlink(record_path.c_str());  // an earlier process's (a restarted role's)
  const std::string tag = NewTreeTag(name);
  const std::vector<std::string> env = EnvironmentWith(record_path, tag);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  // A stop signal between fork and exec would reach the child's copy of this process's
  // handler and be lost: the child takes the stop signals blocked, with their default
  // actions restored before they are unblocked (a pending one then ends it).
  sigset_t stops, before;
  sigemptyset(&stops);
  for (const int s : kStopSignals) sigaddset(&stops, s);
  pthread_sigmask(SIG_BLOCK, &stops, &before);
  const pid_t pid = fork();
  if (pid != 0) pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (pid < 0) {
    close(log_fd);
    return absl::ResourceExhaustedError(absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    struct sigaction default_action = {};
    default_action.sa_handler = SIG_DFL;
    for (const int s : kStopSignals) sigaction(s, &default_action, nullptr);
    alarm(0);  // the parent's stop deadline is not the child's
    sigprocmask(SIG_SETMASK, &before, nullptr);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(log_fd);
  children_.push_back({name, log_path, {pid, tag}, true});
  return absl::OkStatus();
}

std::vector<ChildExit> ProcessGroup::Reap() {
  std::vector<ChildExit> exits;
  int status = 0;
  // Every child that has ended: a role's, or a descendant's that came back here.
  for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
    Child* c = RunningChild(pid);
    if (c == nullptr) continue;
    c->running = false;
    exits.push_back(ExitOf(c->name, c->log_path, c->tree, status));
    leftovers_.push_back({c->tree, absl::Now() + kLeftoverGrace, /*warned=*/false});
  }
  if (!leftovers_.empty()) EndLeftovers(ProcessTable::Read(), absl::Now());
  return exits;
}

ProcessGroup::Child* ProcessGroup::RunningChild(pid_t pid) {
  for (Child& c : children_) {
    if (c.running && c.tree.root == pid) return &c;
  }
  return nullptr;
}

void ProcessGroup::EndLeftovers(const ProcessTable& table, absl::Time now) {
  std::vector<Leftover> remaining;
  for (Leftover& l : leftovers_) {
    const std::vector<pid_t> members = table.TreeMembers(l.tree);
    if (members.empty()) continue;
    if (!l.warned) SignalAll(members, SIGTERM);
    l.warned = true;
    if (now >= l.kill_at) SignalAll(members, SIGKILL);
    remaining.push_back(std::move(l));
  }
  leftovers_ = std::move(remaining);
}

int ProcessGroup::running() const {
  int n = 0;
  for (const Child& c : children_) n += c.running ? 1 : 0;
  return n;
}

std::vector<std::string> ProcessGroup::RunningNames() const {
  std::vector<std::string> names;
  for (const Child& c : children_) {
    if (c.running) names.push_back(c.name);
  }
  return names;
}

void ProcessGroup::StopAll(absl::Duration grace) {
  const absl::Time deadline = absl::Now() + grace;
  const ProcessTable table = ProcessTable::Read();
  for (auto c = children_.rbegin(); c != children_.rend(); ++c) {
    if (c->running) SignalAll(table.TreeMembers(c->tree), SIGTERM);
  }
  for (Leftover& l : leftovers_) l.kill_at = std::min(l.kill_at, deadline);
  while ((running() > 0 || !leftovers_.empty()) && absl::Now() < deadline) {
    Reap();
    absl::SleepFor(absl::Milliseconds(50));
  }
  for (Child& c : children_) {
    if (!c.running) continue;
    leftovers_.push_back({c.tree, deadline, /*warned=*/true});
    kill(c.tree.root, SIGKILL);
    waitpid(c.tree.root, nullptr, 0);
    c.running = false;
  }
  KillStrays();
}

void ProcessGroup::KillStrays() {
  for (int round = 0; round < 100; ++round) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const ProcessTable table = ProcessTable::Read();
    EndLeftovers(table, absl::InfiniteFuture());
    const std::vector<pid_t> strays = table.LiveChildrenOf(getpid());
    if (leftovers_.empty() && strays.empty()) return;
    SignalAll(strays, SIGKILL);
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::string LogExcerpt(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::StrCat("Its log ", path, " is gone (was the run directory deleted?)");
  }
  const std::string tail = TailOfFile(path, 8);
  if (tail.empty()) return absl::StrCat("Its log ", path, " is empty");
  return absl::StrCat("Last lines of ", path, ":\n", tail);
}

absl::StatusOr<int> RunProgram(const std::vector<std::string>& argv,
                               const std::atomic<bool>* stop) {
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
    if (stop != nullptr && stop->load()) kill(pid, SIGTERM);  // Ctrl-C: let the program end
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return absl::NotFoundError(absl::StrCat(argv[0], " not found on PATH"));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace monsoon
