// The signals that ask a Monsoon process to stop, listed once for the launcher, the roles and
// worker programs, and how long a process may take to stop after the first.
#ifndef MONSOON_CORE_STOP_SIGNALS_H_
#define MONSOON_CORE_STOP_SIGNALS_H_

#include <csignal>

#include "absl/time/time.h"

namespace monsoon {

// SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed or ssh dropped), SIGQUIT and SIGUSR1
// (SLURM's --signal warning before the time limit).
inline constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1};

// A server still running this long after its first stop signal (it writes its final
// checkpoint on the way out) is ended by SIGALRM.
inline constexpr absl::Duration kStopDeadline = absl::Seconds(60);
// The same for a worker or the evaluator (Monsoon's or a worker program): one busy in a
// forward pass, a kernel or the user's own code is ended this soon, its last push kept
// exactly once by the servers' numbering.
inline constexpr absl::Duration kClientStopDeadline = absl::Seconds(5);

}  // namespace monsoon

#endif  // MONSOON_CORE_STOP_SIGNALS_H_
