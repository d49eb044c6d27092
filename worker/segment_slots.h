// The client's side of the segment a server on its host shares with it
// (core/process/segment_layout.h): a pool of slots, and calls through their call blocks. A
// call claims the slots it uses before it starts and releases them once the server has
// answered it. A slot whose call ended without an answer is never released, since the server
// may still read or write it; when no slot is free, a call's payloads go in its frames.
#ifndef MONSOON_WORKER_SEGMENT_SLOTS_H_
#define MONSOON_WORKER_SEGMENT_SLOTS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/process/segment_layout.h"
#include "core/process/shared_segment.h"
#include "proto/segment_call.h"

namespace monsoon {

class SegmentSlots {
 public:
  // `memory` must be layout.bytes() long, made by process `server_pid`.
  SegmentSlots(std::unique_ptr<SharedSegment> memory, uint64_t id, const SegmentLayout& layout,
               pid_t server_pid);
  // Every call must have been answered (or failed).
  ~SegmentSlots();
  SegmentSlots(const SegmentSlots&) = delete;
  SegmentSlots& operator=(const SegmentSlots&) = delete;

  uint64_t id() const { return id_; }
  // A free slot, claimed now; -1 when none is free. Thread-safe.
  int Claim();
  // Frees a claimed slot once the server has answered the call that claimed it.
  void Release(int slot);
  uint8_t* At(int slot) const { return memory_->data() + layout_.Offset(slot); }

  // A call's answer: the reply frame, or the error.
  using Answered = std::function<void(absl::StatusOr<grpc::ByteBuffer>)>;
  // Posts `request` in the call block of slot `slot` (claimed by the caller, as is every slot
  // holding the call's payloads) and rings the server. `answered` runs once, on this
  // segment's thread (on the caller's when the request cannot be posted): with the server's
  // answer; Unavailable when the server closes the segment or its process ends first;
  // DeadlineExceeded when no answer came within a grace period after the request's deadline.
  // Thread-safe.
  void Call(int slot, const SegmentRequest& request, Answered answered);
  // Whether the server has closed the segment or its process has ended. Thread-safe.
  bool ServerGone() const;

 private:
  struct Waiting {
    Answered answered;
    absl::Time give_up;
  };
  // Hands answers to their calls until destruction (the segment's thread).
  void Watch();
  // The calls that have ended (answered, given up, or their server gone), taken out of
  // waiting_, each with its answer.
  std::vector<std::pair<Answered, absl::StatusOr<grpc::ByteBuffer>>> TakeEnded()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Busy() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closing_ || !waiting_.empty(); }

  const std::unique_ptr<SharedSegment> memory_;
  const uint64_t id_;
  const SegmentLayout layout_;
  const int server_pidfd_;  // -1 when it could not be opened: then only deadlines end calls
  absl::Mutex mu_;
  std::vector<int> free_ ABSL_GUARDED_BY(mu_);
  std::map<int, Waiting> waiting_ ABSL_GUARDED_BY(mu_);  // by slot
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watcher_;  // last: it starts once the rest is set
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_SEGMENT_SLOTS_H_
