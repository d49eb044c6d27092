#include "launcher/simulation/turns.h"

#include <utility>

namespace monsoon {

Turns::~Turns() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    for (auto& p : participants_) p->turn.notify_one();
  }
  for (auto& p : participants_) {
    if (p->thread.joinable()) p->thread.join();
  }
}

void Turns::WaitForTurn(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, int id) {
  cv.wait(lock, [&] { return current_ == id || (id != kScheduler && cancelled_); });
}

int Turns::Spawn(std::function<void()> body) {
  std::lock_guard<std::mutex> spawning(mu_);
  const int id = static_cast<int>(participants_.size());
  participants_.push_back(std::make_unique<Participant>());
  Participant* p = participants_.back().get();
  p->thread = std::thread([this, p, id, body = std::move(body)] {
    {
      std::unique_lock<std::mutex> lock(mu_);
      WaitForTurn(lock, p->turn, id);
      if (cancelled_ && current_ != id) {
        p->done = true;
        return;
      }
    }
    body();
    std::lock_guard<std::mutex> lock(mu_);
    p->done = true;
    current_ = kScheduler;
    scheduler_turn_.notify_one();
  });
  return id;
}

void Turns::Resume(int id) {
  std::unique_lock<std::mutex> lock(mu_);
  Participant* p = participants_[id].get();
  if (p->done) return;
  current_ = id;
  p->turn.notify_one();
  WaitForTurn(lock, scheduler_turn_, kScheduler);
}

bool Turns::Yield(int id) {
  std::unique_lock<std::mutex> lock(mu_);
  current_ = kScheduler;
  scheduler_turn_.notify_one();
  WaitForTurn(lock, participants_[id]->turn, id);
  return current_ == id;
}

bool Turns::done(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return participants_[id]->done;
}

}  // namespace monsoon
