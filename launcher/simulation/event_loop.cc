#include "launcher/simulation/event_loop.h"

#include <algorithm>
#include <utility>

namespace monsoon {

bool EventLoop::Later(const Event& a, const Event& b) {
  return a.time != b.time ? a.time > b.time : a.order > b.order;
}

void EventLoop::At(double seconds, std::function<void()> event) {
  heap_.push_back({std::max(seconds, now_), scheduled_++, std::move(event)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

void EventLoop::Run(uint64_t watch_every, const std::function<void()>& watch) {
  while (!heap_.empty() && !stopped_) {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    Event next = std::move(heap_.back());
    heap_.pop_back();
    now_ = next.time;
    ++events_run_;
    next.run();
    if (watch && events_run_ % watch_every == 0) watch();
  }
}

}  // namespace monsoon
