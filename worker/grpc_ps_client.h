// PsClient over gRPC: a small pool of channels per server, chunk RPCs with a window of
// max_in_flight per server, payloads as raw slices (pushes and exchanges borrow the caller's
// buffer; replies decode straight into the caller's vector). With a server on this host, chunk
// calls travel through the segment it shares with this client instead (transport.local), and
// pulls copy the chunks out of its chunk window, calling only to wait or to retry. Every RPC
// carries the job token and a deadline; a pull that waits for a version or clock waits within that
// deadline. A chunk call that fails with UNAVAILABLE or RESOURCE_EXHAUSTED is retried (pushes are
// numbered, so a retry is applied at most once); a thread sends heartbeats to every server.
#ifndef MONSOON_WORKER_GRPC_PS_CLIENT_H_
#define MONSOON_WORKER_GRPC_PS_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/compression.h"
#include "core/process/chunk_window.h"
#include "core/process/shared_segment.h"
#include "core/run/job_secrets.h"
#include "core/run/run_dir.h"
#include "core/sharding_plan.h"
#include "worker/chunk_call_window.h"
#include "worker/ps_client.h"
#include "worker/segment_slots.h"

namespace grpc {
class ByteBuffer;
class Slice;
template <class RequestType, class ResponseType>
class TemplatedGenericStub;
typedef TemplatedGenericStub<ByteBuffer, ByteBuffer> GenericStub;
}  // namespace grpc

namespace monsoon {
namespace wire {
class PushRequest;
class SegmentOffer;
class WindowReads;
}  // namespace wire

struct GrpcPsClientOptions {
  JobSecrets secrets;           // the token (and TLS material) every call carries
  int max_in_flight = 16;       // chunk RPCs in flight per server
  int channels_per_server = 2;  // TCP connections per server; chunks alternate between them
  absl::Duration rpc_timeout = absl::Seconds(30);
  // How pushed gradients travel (transport.compression); with kTopk, chunks the worker
  // sparsified go as index/value pairs when that is smaller.
  Compression compression = Compression::kNone;
  // Heartbeats to every server at this interval (0: none).
  absl::Duration heartbeat_interval = absl::ZeroDuration();
  // Attempts per chunk call that fails with UNAVAILABLE (a connection reset, a server busy
  // restarting) or RESOURCE_EXHAUSTED (a server shedding load at its memory quota); backoff
  // doubles from 100 ms, 1.5 s in all.
  int max_attempts = 5;
  // Chunk payloads to and from servers on this host (transport.local).
  LocalTransport local = LocalTransport::kAuto;
};

class GrpcPsClient : public PsClient {
 public:
  // Connects to servers[j] = "host:port" of server j and checks with Hello that each holds
  // the chunks `plan` gives it (and learns where a worker resumes). Unavailable names a server
  // that cannot be reached.
  static absl::StatusOr<std::unique_ptr<GrpcPsClient>> Connect(
      const std::vector<std::string>& servers, const ShardingPlan& plan, ClientIdentity identity,
      const GrpcPsClientOptions& options);
  ~GrpcPsClient() override;

  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override;
  absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient, const ChunkVersions& base_versions,
                                      const PushOrigin& origin) override;
  absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                          const ChunkVersions& base_versions,
                                          const PushOrigin& origin, PullAfterPush* pull) override;
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                          absl::Span<float> difference, ChunkVersions* versions,
                                          const PushOrigin& origin) override;
  absl::StatusOr<ResumePoint> Resume() override { return resume_; }
  absl::Status Finish() override;
  absl::StatusOr<std::vector<ServerStats>> AllStats() override;
  TransferCounters counters() const override;
  const ShardingPlan& plan() const override { return plan_; }
  // The servers whose chunk payloads go through a shared segment.
  std::vector<int> SharedMemoryServers() const;
  // The servers whose chunk windows this client's pulls read (a subset of the above).
  std::vector<int> WindowServers() const;

 private:
  GrpcPsClient(std::vector<std::string> addresses, const ShardingPlan& plan,
               ClientIdentity identity, const GrpcPsClientOptions& options);

  // Builds one request per chunk (but those `done` marks, by chunk id) and runs them, at most
  // max_in_flight per server at a time; on_reply runs on the calling thread, one reply at a
  // time, while later calls are still in flight. After an error no new call starts; returns
  // the first error.
  absl::Status ForEachChunk(const ChunkMethod& method, const ChunkCallWindow::MakeRequest& request,
                            const ChunkCallWindow::OnReply& on_reply,
                            const std::vector<bool>& done = {});
  // PullAll's work for the chunks `wanted` marks (by chunk id; empty: all), which it writes
  // into `params` and *versions (when not null).
  absl::StatusOr<PullResult> PullChunks(absl::Span<float> params, const PullWait& wait,
                                        const std::vector<bool>& wanted, ChunkVersions* versions);
  // Calls for each chunk `done` leaves, writing it into `params`, *result and *versions (when not
  // null) and marking it done. A chunk `from_window` marks (by chunk id; empty: none) is read
  // from its server's window once the call says its condition holds, and left undone when the
  // read overlapped a write twice.
  absl::Status CallPulls(absl::Span<float> params, const PullWait& wait,
                         const std::vector<bool>& from_window, std::vector<bool>* done,
                         PullResult* result, ChunkVersions* versions);
  // Copies chunk c from its server's window into its place in `params` when the window holds
  // it at min_version or later (tried twice when a write overlapped the copy).
  bool ReadWindow(const Chunk& c, uint64_t min_version, absl::Span<float> params,
                  WindowedChunk* seen) const;
  // By chunk id: whether its server shares a chunk window and is still there.
  std::vector<bool> WindowedChunks() const;
  // Reads into `params` each chunk `wanted` marks (empty: all) that `windowed` marks
  // (WindowedChunks) and whose window holds it as `wait` asks (a wait for a clock always calls),
  // noting each in *result and *versions (when not null). Returns the chunks left for calls as
  // false, by chunk id.
  std::vector<bool> ReadWindows(absl::Span<float> params, const PullWait& wait,
                                const std::vector<bool>& wanted, const std::vector<bool>& windowed,
                                PullResult* result, ChunkVersions* versions);
  // Moves the window reads not yet reported to `server` into `out`.
  void TakeUnreportedReads(int server, wire::WindowReads* out);
  // PushAll, and PushPullAll when `pull` is not null.
  absl::StatusOr<PushSummary> PushChunks(absl::Span<const float> gradient,
                                         const ChunkVersions& base_versions,
                                         const PushOrigin& origin, PullAfterPush* pull);
  // The payload of chunk c's push, `chunk`, in the encoding options_.compression asks for (set
  // in *request; a state chunk's is float32): written to slot `slot` of its server's segment
  // when slot >= 0 (the request then says so), else returned (float32 chunks borrow the
  // caller's memory).
  grpc::Slice EncodeGradient(const Chunk& c, absl::Span<const float> chunk, int slot,
                             wire::PushRequest* request) const;
  // The segment chunk c's server shares with this client; null when none.
  SegmentSlots* SlotsOf(const Chunk& c) const { return segments_[c.server].get(); }
  // Maps server j's offered segment and chunk window (Connect); a failure is an error only
  // with transport.local shm.
  absl::Status AttachSegment(int server, const wire::SegmentOffer& offer);
  // One blocking call to one server, with options_.rpc_timeout unless `timeout` is given.
  absl::Status Call(int server, const std::string& method, const grpc::ByteBuffer& request,
                    grpc::ByteBuffer* reply, absl::Duration timeout = absl::ZeroDuration());
  // Prefixes a failed call's status with the server's index and address.
  absl::Status Annotate(int server, const std::string& what, const absl::Status& status) const;
  // Sends a heartbeat to every server each options_.heartbeat_interval until destruction.
  void HeartbeatLoop();

  // Immutable after construction.
  const std::vector<std::string> addresses_;
  const ShardingPlan plan_;
  const ClientIdentity identity_;
  const GrpcPsClientOptions options_;
  // stubs_[server][k]: one stub per channel of the server's pool.
  std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>> stubs_;
  // segments_[server]: the segment it shares with this client; null when none (set by Connect).
  std::vector<std::unique_ptr<SegmentSlots>> segments_;
  // windows_[server]: its chunk window, read while its segment's server lives; null when none.
  std::vector<std::unique_ptr<ChunkWindow>> windows_;
  // Per server, the window reads not yet reported to it (with a push, or Finish).
  struct UnreportedReads {
    std::atomic<uint64_t> reads{0};
    std::atomic<uint64_t> bytes{0};
  };
  std::vector<UnreportedReads> unreported_;

  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};
  ResumePoint resume_;  // set by Connect

  absl::Mutex heartbeat_mu_;
  bool closing_ ABSL_GUARDED_BY(heartbeat_mu_) = false;
  std::thread heartbeat_thread_;
};

// The Stats of the server at `address` ("host:port"), asked with the job's secrets and nothing
// else: no Hello, so the server does not take the caller for a worker or an evaluator.
// Unauthenticated when the address is another job's server; Unavailable or DeadlineExceeded
// when nothing there answers within `timeout`.
absl::StatusOr<ServerStats> QueryServerStats(const std::string& address, const JobSecrets& secrets,
                                             absl::Duration timeout);

}  // namespace monsoon

#endif  // MONSOON_WORKER_GRPC_PS_CLIENT_H_
