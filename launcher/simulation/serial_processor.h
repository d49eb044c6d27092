// A simulated server's processor: it handles the messages that change its weights (pushes and
// exchanges) one at a time, in the order they arrive, each for its bytes / rate seconds.
#ifndef MONSOON_LAUNCHER_SIMULATION_SERIAL_PROCESSOR_H_
#define MONSOON_LAUNCHER_SIMULATION_SERIAL_PROCESSOR_H_

#include <functional>

#include "launcher/simulation/event_loop.h"

namespace monsoon {

class SerialProcessor {
 public:
  // `bytes_per_second` 0: handling takes no time. Borrows `loop`.
  SerialProcessor(EventLoop* loop, double bytes_per_second)
      : loop_(loop), bytes_per_second_(bytes_per_second) {}

  // `bytes` of work arriving now; `handled` runs once the work before it and its own are done
  // (at once, within this call, when handling takes no time).
  void Handle(double bytes, std::function<void()> handled);
  // Simulated seconds it has spent handling.
  double busy_seconds() const { return busy_; }

 private:
  EventLoop* const loop_;
  const double bytes_per_second_;
  double free_at_ = 0;  // virtual second its queued work ends
  double busy_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_SERIAL_PROCESSOR_H_
