// The exit statuses of Monsoon's processes (README "Commands"): 0 success, 1 the job or role
// failed, 2 a bad command line, config or launch environment, 3 a server did not answer a
// client role, 4 a worker stalled, 130 stopped by a signal.
#ifndef MONSOON_CORE_EXIT_STATUS_H_
#define MONSOON_CORE_EXIT_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

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
// stop (its peers shut down on the same signal) is reported as the stop, Cancelled "WHO
// stopped by signal; after it: ...". Anything else is returned as it is.
absl::Status AfterStop(absl::Status s, bool stopped, absl::string_view who);

}  // namespace monsoon

#endif  // MONSOON_CORE_EXIT_STATUS_H_
