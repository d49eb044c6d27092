// Child processes of a local job: started with their output in a log file, watched, and
// stopped together. A child gets SIGTERM when the launcher dies (PR_SET_PDEATHSIG), so it
// stops as it would on a stop signal (a server writes its final checkpoint) and none is
// orphaned.
#ifndef MONSOON_LAUNCHER_LOCAL_PROCESS_GROUP_H_
#define MONSOON_LAUNCHER_LOCAL_PROCESS_GROUP_H_

#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/exit_status.h"
#include "core/stop_signals.h"

namespace monsoon {

// How a child ended, for supervision.
enum class ExitKind {
  kFinished,  // exit 0
  kStopped,   // killed by a signal sent from outside (SIGKILL, SIGTERM, SIGHUP, ...) or exited
              // kExitStopped after a stop signal: lost, not wrong
  kCrashed,   // ended by a signal of its own making (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, ...)
  kStalled,   // a worker that ended itself because its compute made no progress
              // (kExitStalled): lost, as a stopped one
  kFailed,    // any other non-zero exit status
};

struct ChildExit {
  std::string name;
  std::string log_path;
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that killed it, or 0
  // What the process recorded of its exit (core/exit_status.h), where it did.
  std::optional<ExitRecord> record;
  bool ok() const { return signal == 0 && exit_code == 0; }
  ExitKind kind() const;
  std::string Describe() const;

 private:
  std::string DescribeFailure() const;
};

// Not thread-safe; owned by the launcher's main thread.
class ProcessGroup {
 public:
  ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  // Stops whatever is still running.
  ~ProcessGroup();

  // Starts `argv` (argv[0] is the executable path) named `name`, stdout and stderr appended
  // to log_path, its exit record (MONSOON_EXIT_RECORD) beside it: log_path's stem + ".exit".
  absl::Status Start(const std::string& name, const std::vector<std::string>& argv,
                     const std::string& log_path);

  // Reaps children that have exited, without blocking.
  std::vector<ChildExit> Reap();

  int running() const;
  // The names of the children still running, in start order.
  std::vector<std::string> RunningNames() const;

  // SIGTERM to every running child; SIGKILL to those still running after `grace`.
  void StopAll(absl::Duration grace);

 private:
  struct Child {
    std::string name;
    std::string log_path;
    pid_t pid = 0;
    bool running = true;
  };
  std::vector<Child> children_;
};

// Runs `argv` (argv[0] searched on PATH) in the foreground and returns its exit status (128 +
// the signal that killed it); SIGTERMs it when *stop becomes true meanwhile. NotFound when
// argv[0] is not on PATH.
absl::StatusOr<int> RunProgram(const std::vector<std::string>& argv, const std::atomic<bool>* stop);

// "Last lines of PATH:\n..." (8 lines) for an error report, or why there are none: the log
// is empty, or cannot be read (its run directory deleted, say).
std::string LogExcerpt(const std::string& path);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_PROCESS_GROUP_H_
