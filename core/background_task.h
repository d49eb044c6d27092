// One task at a time, run either on a thread of the object's own while its owner gets on with
// other work, or at once on the caller's thread.
#ifndef MONSOON_CORE_BACKGROUND_TASK_H_
#define MONSOON_CORE_BACKGROUND_TASK_H_

#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace monsoon {

// Start/Wait/Arrived are for one thread (the owner's); the task runs on the object's thread.
// The destructor waits for a task in flight and joins that thread, so whatever the task
// borrows must outlive the object; owners destroy it (or Wait) before what it borrows.
template <class Result>
class BackgroundTask {
 public:
  using Task = std::function<Result()>;

  // asynchronous: Start returns at once and the task runs on this object's thread; otherwise
  // Start runs it before returning.
  explicit BackgroundTask(bool asynchronous) {
    if (asynchronous) thread_ = std::thread([this] { Serve(); });
  }
  ~BackgroundTask() {
    if (!thread_.joinable()) return;
    {
      absl::MutexLock lock(&mu_);
      quit_ = true;
    }
    thread_.join();  // Serve runs a task already started before it sees quit_
  }
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  // REQUIRES: no task in flight (Wait first).
  void Start(Task task) {
    in_flight_ = true;
    if (!thread_.joinable()) {
      Result result = task();
      absl::MutexLock lock(&mu_);
      result_.emplace(std::move(result));
      return;
    }
    absl::MutexLock lock(&mu_);
    task_ = std::move(task);
  }
  // True from Start until Wait returns.
  bool in_flight() const { return in_flight_; }
  // True when the task in flight has finished (Wait will not block).
  bool Arrived() const {
    absl::MutexLock lock(&mu_);
    return result_.has_value();
  }
  // The task's result. REQUIRES: in_flight().
  Result Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BackgroundTask::HasResult));
    Result result = *std::move(result_);
    result_.reset();
    in_flight_ = false;
    return result;
  }

 private:
  void Serve() {
    while (true) {
      Task task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &BackgroundTask::HasWork));
        if (!task_) return;  // quit_, nothing left to run
        task = std::move(task_);
        task_ = nullptr;
      }
      Result result = task();
      absl::MutexLock lock(&mu_);
      result_.emplace(std::move(result));
    }
  }
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return task_ != nullptr || quit_; }
  bool HasResult() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return result_.has_value(); }

  bool in_flight_ = false;
  mutable absl::Mutex mu_;
  Task task_ ABSL_GUARDED_BY(mu_);  // the task to run next; empty once taken
  std::optional<Result> result_ ABSL_GUARDED_BY(mu_);
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started last, by the constructor; joined by the destructor
};

}  // namespace monsoon

#endif  // MONSOON_CORE_BACKGROUND_TASK_H_
