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

// A role still running this long after its first stop signal is ended by SIGALRM.
inline constexpr absl::Duration kStopDeadline = absl::Seconds(60);

}  // namespace monsoon

#endif  // MONSOON_CORE_STOP_SIGNALS_H_
