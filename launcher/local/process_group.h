// Child processes of a local job: started with their output in a log file, watched, and
// stopped together. Each child is a role's whole process tree (process_tree.h): it starts in a
// process group of its own (not a session: under the kernel's autogroup a session is a
// scheduling group of its own, which would share the CPUs by role instead of by thread), the
// launcher is a child subreaper (processes whose parents die come back to it), and when the
// child ends, or the job does, every process of its tree is stopped as the child is: SIGTERM,
// then SIGKILL after a grace period. A child gets SIGTERM when the launcher dies
// (PR_SET_PDEATHSIG), so it stops as it would on a stop signal (a server writes its final
// checkpoint).
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
#include "launcher/local/process_tree.h"

namespace monsoon {

// How a child ended as the launcher sees it, for supervision: from its exit status or signal,
// and its exit record (the role's own account, RecordedExitCause) where that is to be believed.
enum class ObservedExitKind {
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
  // What the role's process tree recorded of its exit (core/exit_status.h), where it did.
  std::optional<ExitRecord> record;
  bool ok() const { return signal == 0 && exit_code == 0; }
  // Whether its record says its training diverged (RecordedExitCause::kDiverged).
  bool diverged() const {
    return record.has_value() && record->cause == RecordedExitCause::kDiverged;
  }
  ObservedExitKind kind() const;
  std::string Describe() const;

 private:
  std::string DescribeFailure() const;
};

// Not thread-safe; owned by the launcher's main thread, which it makes a child subreaper. While
// it has children it is the process's only reaper: Reap() also reaps the processes it did not
// start that come back to it, so one ProcessGroup at a time may run children.
class ProcessGroup {
 public:
  ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  // Stops whatever is still running.
  ~ProcessGroup();

  // Starts `argv` (argv[0] is the executable path) named `name`, stdout and stderr appended
  // to log_path, its exit record (MONSOON_EXIT_RECORD) beside it: log_path's stem + ".exit".
  // Its process tree's tag (MONSOON_PROCESS_TREE) is new to this start.
  absl::Status Start(const std::string& name, const std::vector<std::string>& argv,
                     const std::string& log_path);

  // Reaps children that have exited, without blocking; the rest of each one's tree gets
  // SIGTERM, and SIGKILL kLeftoverGrace later.
  std::vector<ChildExit> Reap();
  static constexpr absl::Duration kLeftoverGrace = absl::Seconds(7);

  int running() const;
  // The names of the children still running, in start order.
  std::vector<std::string> RunningNames() const;

  // SIGTERM to every process of every child's tree, the last started first (a job's clients
  // before the servers they call, so that a client learns of the stop before a stopped
  // server cancels its call); SIGKILL to those still running after `grace`, and to every
  // other process left whose parent is this one.
  void StopAll(absl::Duration grace);

 private:
  struct Child {
    std::string name;
    std::string log_path;
    ProcessTree tree;  // tree.root: the child's pid
    bool running = true;
  };
  // The tree of a child that has ended, while processes of it remain.
  struct Leftover {
    ProcessTree tree;
    absl::Time kill_at;
    bool warned = false;  // its processes have had SIGTERM
  };
  // The running child of pid `pid`, or nullptr.
  Child* RunningChild(pid_t pid);
  // SIGTERMs the leftovers' processes once, SIGKILLs them past their time, and forgets the
  // trees that have ended.
  void EndLeftovers(const ProcessTable& table, absl::Time now);
  // SIGKILLs every leftover and every other live child of this process (descendants that left
  // their trees and came back here), and reaps them: for up to a second.
  void KillStrays();

  std::vector<Child> children_;
  std::vector<Leftover> leftovers_;
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
