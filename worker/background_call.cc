#include "worker/background_call.h"

#include <utility>

namespace monsoon {

BackgroundCall::BackgroundCall(bool asynchronous) {
  if (asynchronous) thread_ = std::thread([this] { Serve(); });
}

BackgroundCall::~BackgroundCall() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    quit_ = true;
  }
  thread_.join();  // Serve runs a call already started before it sees quit_
}

void BackgroundCall::Start(Call call) {
  in_flight_ = true;
  if (!thread_.joinable()) {
    absl::StatusOr<PushSummary> result = call();
    absl::MutexLock lock(&mu_);
    result_ = std::move(result);
    return;
  }
  absl::MutexLock lock(&mu_);
  call_ = std::move(call);
}

bool BackgroundCall::Arrived() const {
  absl::MutexLock lock(&mu_);
  return result_.has_value();
}

absl::StatusOr<PushSummary> BackgroundCall::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &BackgroundCall::HasResult));
  absl::StatusOr<PushSummary> result = *std::move(result_);
  result_.reset();
  in_flight_ = false;
  return result;
}

void BackgroundCall::Serve() {
  while (true) {
    Call call;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &BackgroundCall::HasWork));
      if (!call_) return;  // quit_, nothing left to run
      call = std::move(call_);
      call_ = nullptr;
    }
    absl::StatusOr<PushSummary> result = call();
    absl::MutexLock lock(&mu_);
    result_ = std::move(result);
  }
}

}  // namespace monsoon
