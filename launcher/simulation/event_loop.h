// The virtual clock of a simulated cluster: events run in virtual-time order, ties in the
// order they were scheduled, so that the same job and seed run the same events in the same
// order every time.
#ifndef MONSOON_LAUNCHER_SIMULATION_EVENT_LOOP_H_
#define MONSOON_LAUNCHER_SIMULATION_EVENT_LOOP_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/time/time.h"
#include "core/clock.h"

namespace monsoon {

// Not thread-safe: one thread at a time schedules and runs events (Turns hands the turn over).
class EventLoop {
 public:
  // Virtual second 0 is `origin` on the Clock.
  explicit EventLoop(absl::Time origin) : origin_(origin) {}

  absl::Time Now() const { return origin_ + absl::Seconds(now_); }
  // Simulated seconds since the start.
  double seconds() const { return now_; }
  // Runs `event` at virtual second max(seconds, now).
  void At(double seconds, std::function<void()> event);
  void After(double delay, std::function<void()> event) { At(now_ + delay, std::move(event)); }
  // Runs events, in order, until none is left or Stop is called; with `watch`, calls it
  // between events after every `watch_every` of them (to look at the real clock, say).
  void Run(uint64_t watch_every = 0, const std::function<void()>& watch = nullptr);
  // Makes Run return once the event running now has ended; later events stay unrun.
  void Stop() { stopped_ = true; }
  // Events scheduled and not yet run.
  size_t pending() const { return heap_.size(); }
  // Events run so far.
  uint64_t events_run() const { return events_run_; }

 private:
  struct Event {
    double time;
    uint64_t order;
    std::function<void()> run;
  };
  // Orders the heap with the earliest (time, order) on top.
  static bool Later(const Event& a, const Event& b);

  const absl::Time origin_;
  double now_ = 0;
  uint64_t scheduled_ = 0;
  uint64_t events_run_ = 0;
  bool stopped_ = false;
  std::vector<Event> heap_;
};

// What a simulated role reads as the time: the loop's, plus the compute its thread has done
// since its last call to the servers (SleepFor: its model's steps and its stragglers'
// delays), which that call's messages leave after.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(const EventLoop* loop) : loop_(loop) {}
  absl::Time Now() const override { return loop_->Now() + absl::Seconds(compute_); }
  void SleepFor(absl::Duration d) const override { compute_ += absl::ToDoubleSeconds(d); }
  // The compute since the last call, in seconds, counted from now on as passed.
  double TakeCompute() {
    const double compute = compute_;
    compute_ = 0;
    return compute;
  }

 private:
  const EventLoop* const loop_;
  mutable double compute_ = 0;  // SleepFor is const, as Clock's
};

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_EVENT_LOOP_H_
