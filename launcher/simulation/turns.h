// Threads that take turns: each participant runs only while the scheduling thread has handed
// it the turn, and hands it back by yielding or by returning. So a simulated worker's own
// code (TrainingWorker, with its blocking client calls) runs as one of many coroutines, one at
// a time, in an order the event loop alone decides.
#ifndef MONSOON_LAUNCHER_SIMULATION_TURNS_H_
#define MONSOON_LAUNCHER_SIMULATION_TURNS_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace monsoon {

class Turns {
 public:
  Turns() = default;
  // Cancels every participant still waiting for a turn (Yield returns false to it) and joins
  // them all.
  ~Turns();
  Turns(const Turns&) = delete;
  Turns& operator=(const Turns&) = delete;

  // Starts `body` on a thread of its own that waits for its first turn; returns its id.
  int Spawn(std::function<void()> body);
  // On the scheduling thread: hands the turn to participant `id` and waits until it yields or
  // its body returns. Nothing when its body has returned.
  void Resume(int id);
  // On participant `id`'s thread: hands the turn back and waits for the next. False when the
  // simulation is being torn down: the participant must return without waiting again.
  bool Yield(int id);
  bool done(int id) const;

 private:
  static constexpr int kScheduler = -1;
  struct Participant {
    std::condition_variable turn;
    bool done = false;
    std::thread thread;
  };
  // Waits on `cv` until `id` holds the turn or the participants are cancelled.
  void WaitForTurn(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int id);

  mutable std::mutex mu_;
  std::condition_variable scheduler_turn_;
  int current_ = kScheduler;
  bool cancelled_ = false;
  std::vector<std::unique_ptr<Participant>> participants_;
};

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_TURNS_H_
