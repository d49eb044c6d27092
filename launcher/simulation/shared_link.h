// A simulated network link: each message crosses it in bytes / (bandwidth / n) while n messages
// share it (processor sharing, recomputed as messages start and end), then arrives a latency
// later.
#ifndef MONSOON_LAUNCHER_SIMULATION_SHARED_LINK_H_
#define MONSOON_LAUNCHER_SIMULATION_SHARED_LINK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "launcher/simulation/event_loop.h"

namespace monsoon {

class SharedLink {
 public:
  // `bytes_per_second` 0: no limit (every message takes the latency alone). Borrows `loop`.
  SharedLink(EventLoop* loop, double bytes_per_second, double latency_seconds)
      : loop_(loop), bytes_per_second_(bytes_per_second), latency_(latency_seconds) {}

  // Sends `bytes` now; `arrived` runs on the loop once they have crossed and the latency passed.
  void Send(double bytes, std::function<void()> arrived);
  // The most messages it has carried at once.
  int busiest() const { return busiest_; }

 private:
  struct Transfer {
    double remaining;  // bytes
    std::function<void()> arrived;
  };
  // Brings every transfer's remaining bytes to now.
  void Advance();
  // The fewest bytes any active transfer has left (not below 0); some must be active.
  double LeastRemaining() const;
  // Schedules the next transfer's end; an earlier schedule is void from then on.
  void ScheduleNext();
  // Delivers the transfers that have ended, in the order they were sent.
  void Finish();

  EventLoop* const loop_;
  const double bytes_per_second_;
  const double latency_;
  std::vector<Transfer> active_;
  double updated_ = 0;       // virtual second of the last Advance
  uint64_t generation_ = 0;  // of the scheduled end that is still valid
  int busiest_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_SHARED_LINK_H_
