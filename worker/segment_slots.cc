#include "worker/segment_slots.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

#include "absl/time/clock.h"
#include "core/process/futex.h"
#include "glog/logging.h"

namespace monsoon {
namespace {

// How long after a request's deadline its call is given up: the server answers a call it could
// not serve in time itself, at the deadline.
constexpr absl::Duration kAnswerGrace = absl::Seconds(2);
// How often a call that waits for its answer checks that the server's process is still there.
constexpr absl::Duration kLivenessCheck = absl::Milliseconds(50);

int OpenPidfd(pid_t pid) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    PLOG(WARNING) << "pidfd_open(" << pid << "): calls through its shared segment end only at "
                  << "their deadlines if the server dies";
  }
  return fd;
}

}  // namespace

SegmentSlots::SegmentSlots(std::unique_ptr<SharedSegment> memory, uint64_t id,
                           const SegmentLayout& layout, pid_t server_pid)
    : memory_(std::move(memory)),
      id_(id),
      layout_(layout),
      server_pidfd_(OpenPidfd(server_pid)),
      watcher_([this] { Watch(); }) {
  absl::MutexLock lock(&mu_);
  for (int slot = static_cast<int>(layout.slots) - 1; slot >= 0; --slot) free_.push_back(slot);
}

SegmentSlots::~SegmentSlots() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  watcher_.join();
  if (server_pidfd_ >= 0) close(server_pidfd_);
}

int SegmentSlots::Claim() {
  absl::MutexLock lock(&mu_);
  if (free_.empty()) return -1;
  const int slot = free_.back();
  free_.pop_back();
  return slot;
}

void SegmentSlots::Release(int slot) {
  absl::MutexLock lock(&mu_);
  free_.push_back(slot);
}

void SegmentSlots::Call(int slot, const SegmentRequest& request, Answered answered) {
  const absl::Status posted = PostRequest(request, SegmentLayout::Call(memory_->data(), slot));
  if (!posted.ok()) {
    answered(posted);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    waiting_[slot] = {std::move(answered), request.deadline + kAnswerGrace};
  }
  Ring(SegmentLayout::Bells(memory_->data())->to_server);
}

bool SegmentSlots::ServerGone() const {
  if (SegmentLayout::Bells(memory_->data())->closed.load(std::memory_order_acquire) != 0) {
    return true;
  }
  pollfd ended{server_pidfd_, POLLIN, 0};
  return server_pidfd_ >= 0 && poll(&ended, 1, 0) == 1;
}

std::vector<std::pair<SegmentSlots::Answered, absl::StatusOr<grpc::ByteBuffer>>>
SegmentSlots::TakeEnded() {
  std::vector<std::pair<Answered, absl::StatusOr<grpc::ByteBuffer>>> ended;
  const absl::Time now = absl::Now();
  const bool gone = ServerGone();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    SlotCall* call = SegmentLayout::Call(memory_->data(), it->first);
    absl::StatusOr<grpc::ByteBuffer> answer;
    if (call->state.load(std::memory_order_acquire) == SlotCall::kReply) {
      answer = TakeAnswer(call);
    } else if (gone) {
      answer = absl::UnavailableError("the server has shut down (its shared segment is closed)");
    } else if (now > it->second.give_up) {
      answer = absl::DeadlineExceededError("no answer through the shared segment by the deadline");
    } else {
      ++it;
      continue;
    }
    ended.emplace_back(std::move(it->second.answered), std::move(answer));
    it = waiting_.erase(it);
  }
  return ended;
}

void SegmentSlots::Watch() {
  std::atomic<uint32_t>& bell = SegmentLayout::Bells(memory_->data())->to_client;
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(this, &SegmentSlots::Busy));
    if (waiting_.empty()) return;  // closing
    const uint32_t seen = bell.load(std::memory_order_acquire);
    auto ended = TakeEnded();
    mu_.Unlock();
    if (ended.empty()) FutexWait(bell, seen, kLivenessCheck);
    for (auto& [answered, answer] : ended) answered(std::move(answer));
    mu_.Lock();
  }
}

}  // namespace monsoon
