// The exit statuses of Monsoon's processes (README "Commands"): 0 success, 1 the job or role
// failed, 2 a bad command line, config or launch environment, 3 a server did not answer a
// client role, 4 a worker stalled, 130 stopped by a signal.
#ifndef MONSOON_CORE_EXIT_STATUS_H_
#define MONSOON_CORE_EXIT_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/enum_names.h"

namespace monsoon {

// The exit status of a monsoon process that stopped on a stop signal (SIGINT, SIGTERM, ...).
inline constexpr int kExitStopped = 130;
// The exit status of a worker or evaluator that stopped because a server did not answer it
// (the fault is the server's, or the network's).
inline constexpr int kExitServerUnreachable = 3;
// The exit status of a worker that ended itself because its compute made no progress
// (reliability.stall_seconds; worker/stall_watch.h).
inline constexpr int kExitStalled = 4;

// The exit status of a role process whose role ended with `s`: 0 for OK, kExitStopped for
// Cancelled, kExitServerUnreachable for a client role (`client`) whose call to a server got
// no answer (Unavailable or DeadlineExceeded from a call naming it: "server J (HOST:PORT)
// ..."), else 1.
int RoleExitStatus(const absl::Status& s, bool client);

// A role's result once a stop signal has come (`stopped`): a failure it ran into after the
// stop (its peers shut down on the same signal, a server answering that it is shutting down)
// is reported as the stop, Cancelled "WHO stopped by signal; after it: ...". A status that
// already says "stopped by signal", OK, and any status without a stop are returned as they are.
absl::Status AfterStop(absl::Status s, bool stopped, absl::string_view who);

// How a role process ended, in its own words: Monsoon's role runners (C++ roles, the Python
// package's run_role, a stalled worker's watch) write it to the file $MONSOON_EXIT_RECORD
// names (the launcher sets it for each role: RUN_DIR/logs/NAME.exit) just before the process
// exits. The launcher trusts an exit status of Monsoon's (3, 4, 130) only with a record of the
// same role's process tree saying so (a wrapper script's child, say): one that carries the
// tag the launcher gave the role (kProcessTreeVariable); any other is the program's own.
inline constexpr char kExitRecordVariable[] = "MONSOON_EXIT_RECORD";
// The tag of one started role's processes, inherited by every process it starts
// (launcher/local/process_tree.h); unique to each start of a role.
inline constexpr char kProcessTreeVariable[] = "MONSOON_PROCESS_TREE";
// How a role ended by its own account, as its exit record says (the launcher's view of the same
// process is launcher/local/process_group.h's ObservedExitKind). kDiverged: a failure (exit
// status 1) whose cause is that training diverged (IsDiverged).
enum class RecordedExitCause {
  kFinished,
  kStopped,
  kServerUnreachable,
  kStalled,
  kFailed,
  kDiverged
};
inline constexpr NamedValue<RecordedExitCause> kRecordedExitCauseValues[] = {
    {RecordedExitCause::kFinished, "finished"},
    {RecordedExitCause::kStopped, "stopped"},
    {RecordedExitCause::kServerUnreachable, "server_unreachable"},
    {RecordedExitCause::kStalled, "stalled"},
    {RecordedExitCause::kFailed, "failed"},
    {RecordedExitCause::kDiverged, "diverged"}};
inline constexpr EnumNames<RecordedExitCause> kRecordedExitCauseNames{"exit cause",
                                                                      kRecordedExitCauseValues};

struct ExitRecord {
  int64_t pid = 0;  // the process's
  int status = 0;   // its exit status
  RecordedExitCause cause = RecordedExitCause::kFinished;
  std::string message;  // the role's error, or where it stalled; empty when it finished
  std::string tree;     // the process's kProcessTreeVariable, or "" without one
};

// `s` with `message` for its message; its code and payloads kept.
absl::Status Reworded(const absl::Status& s, absl::string_view message);
// `s` marked as the end of training that diverged: a worker's gradient or weights were not
// finite. The mark survives Reworded, an exit record (kDiverged) and `monsoon run`'s report of
// the job, so that a study records the run as diverged rather than failed.
absl::Status MarkDiverged(const absl::Status& s);
bool IsDiverged(const absl::Status& s);

// The record of a role that ended with `s` (its exit status: RoleExitStatus; its cause
// kDiverged when IsDiverged(s)).
ExitRecord ExitRecordOf(const absl::Status& s, bool client);
// Writes `record`, with this process's pid and tree tag, to $MONSOON_EXIT_RECORD; nothing when
// it is not set. Best effort: a record that cannot be written leaves the exit the process's own.
void RecordExit(ExitRecord record);
// The record at `path`; nullopt when there is none or it does not parse.
std::optional<ExitRecord> ReadExitRecord(const std::string& path);

}  // namespace monsoon

#endif  // MONSOON_CORE_EXIT_STATUS_H_
