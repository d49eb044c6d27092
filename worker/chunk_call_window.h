// One call per chunk of a sharding plan, with a window of calls in flight per server: the
// client's engine for pulls, pushes and exchanges. A call goes through the server's shared
// segment when its payloads lie there, else through gRPC. Replies are handled on the calling
// thread, one at a time, while later calls are still in flight; a call that fails with
// UNAVAILABLE is retried on a fresh call with exponential backoff.
//
// Lifetime: Run() returns only once neither gRPC nor a segment owns a call of the window any
// more. A call's completion callback touches the window only while it holds the lock, or when
// it has just claimed the server's next chunk (which keeps a call outstanding, so Run cannot
// return), so no callback outlives the window.
#ifndef MONSOON_WORKER_CHUNK_CALL_WINDOW_H_
#define MONSOON_WORKER_CHUNK_CALL_WINDOW_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/process/segment_layout.h"
#include "core/sharding_plan.h"
#include "worker/segment_slots.h"

namespace monsoon {

// A chunk call's method: its full gRPC name, and its name in a shared segment.
struct ChunkMethod {
  const char* grpc;
  SegmentMethod segment;
};

// One chunk's request: its frame, and where it may travel.
struct ChunkRequest {
  grpc::ByteBuffer frame;
  // >= 0: every payload of the call lies in its server's segment, and the call may travel
  // through the call block of this slot (one the call holds).
  int segment_slot = -1;
};

// One-shot: construct, Run once. Not thread-safe; gRPC's threads call it back internally.
class ChunkCallWindow {
 public:
  struct Options {
    std::string token;  // sent as metadata with every call
    int max_in_flight = 16;
    int max_attempts = 5;  // per chunk, for UNAVAILABLE and RESOURCE_EXHAUSTED
    absl::Duration rpc_timeout = absl::Seconds(30);
  };
  using MakeRequest = std::function<ChunkRequest(const Chunk&)>;
  using OnReply = std::function<absl::Status(const Chunk&, const grpc::ByteBuffer&)>;
  // Names a failed call's status after its server (index and address) and `what`.
  using Annotate =
      std::function<absl::Status(int server, const std::string& what, const absl::Status&)>;

  // stubs[server][k] is channel k of the server's pool; segments[server] the segment it shares
  // with this client, or null (both borrowed).
  ChunkCallWindow(const ShardingPlan& plan,
                  const std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>>& stubs,
                  const std::vector<std::unique_ptr<SegmentSlots>>& segments,
                  const Options& options, ChunkMethod method, MakeRequest make_request,
                  OnReply on_reply, Annotate annotate);
  ChunkCallWindow(const ChunkCallWindow&) = delete;
  ChunkCallWindow& operator=(const ChunkCallWindow&) = delete;

  // Calls every chunk of the plan but those `done` marks (by chunk id; empty: none); after an
  // error no new call starts. Returns the first error.
  absl::Status Run(const std::vector<bool>& done = {});

 private:
  struct InFlight {
    const Chunk* chunk = nullptr;
    int server = 0;
    int attempt = 1;
    grpc::ClientContext ctx;
    grpc::ByteBuffer request;
    grpc::ByteBuffer reply;
    grpc::Status status;
  };

  // A new call for `chunk` of `server` (counted as outstanding).
  InFlight* NewCall(const Chunk* chunk, int server, int attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next pending chunk of `server` as a new call; nullptr when none is left or a call
  // has failed.
  InFlight* ClaimNext(int server) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Launch(InFlight* call);
  // The call through `segment`, posted in `slot`.
  void LaunchThroughSegment(InFlight* call, SegmentSlots* segment, int slot,
                            grpc::ByteBuffer frame);
  // gRPC's (or the segment's) callback: queues the reply and starts the server's next call.
  void Done(InFlight* call, grpc::Status status);
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !completed_.empty() || outstanding_ == 0;
  }
  // Handles one completed call on the calling thread: a retry, or its reply.
  void Handle(InFlight* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ShardingPlan& plan_;
  const std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>>& stubs_;
  const std::vector<std::unique_ptr<SegmentSlots>>& segments_;
  const Options options_;
  const ChunkMethod method_;
  const std::string what_;  // the method's short name, for errors
  const MakeRequest make_request_;
  const OnReply on_reply_;
  const Annotate annotate_;

  absl::Mutex mu_;
  std::vector<std::deque<const Chunk*>> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<InFlight>> calls_ ABSL_GUARDED_BY(mu_);
  std::deque<InFlight*> completed_ ABSL_GUARDED_BY(mu_);  // replies not yet handled
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;              // calls gRPC still owns
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_CHUNK_CALL_WINDOW_H_
