// PsClient over gRPC: a small pool of channels per server, chunk RPCs with a window of
// max_in_flight per server, payloads as raw slices (pushes and exchanges borrow the caller's
// buffer; replies decode straight into the caller's vector). Every RPC carries the job token
// and a deadline; a pull that waits for a version or clock waits within that deadline.
#ifndef MONSOON_WORKER_GRPC_PS_CLIENT_H_
#define MONSOON_WORKER_GRPC_PS_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/sharding_plan.h"
#include "worker/ps_client.h"

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
}  // namespace wire

struct GrpcPsClientOptions {
  std::string token;
  int max_in_flight = 16;       // chunk RPCs in flight per server
  int channels_per_server = 2;  // TCP connections per server; chunks alternate between them
  absl::Duration rpc_timeout = absl::Seconds(30);
  // How pushed gradients travel (transport.compression): "none" (float32), "fp16", or "topk"
  // (chunks the worker sparsified go as index/value pairs when that is smaller).
  std::string compression = "none";
};

class GrpcPsClient : public PsClient {
 public:
  // Connects to servers[j] = "host:port" of server j and checks with Hello that each holds
  // the chunks `plan` gives it. Unavailable names a server that cannot be reached.
  static absl::StatusOr<std::unique_ptr<GrpcPsClient>> Connect(
      const std::vector<std::string>& servers, const ShardingPlan& plan, ClientIdentity identity,
      const GrpcPsClientOptions& options);
  ~GrpcPsClient() override;

  absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                     ChunkVersions* versions) override;
  absl::StatusOr<PushSummary> PushAll(absl::Span<const float> gradient,
                                      const ChunkVersions& base_versions, double epoch) override;
  absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                          absl::Span<float> difference, ChunkVersions* versions,
                                          double epoch) override;
  absl::Status Finish() override;
  absl::StatusOr<std::vector<ServerStats>> AllStats() override;
  TransferCounters counters() const override;
  const ShardingPlan& plan() const override { return plan_; }

 private:
  GrpcPsClient(std::vector<std::string> addresses, const ShardingPlan& plan,
               ClientIdentity identity, const GrpcPsClientOptions& options);

  // Builds one request per chunk and runs them, at most max_in_flight per server at a time;
  // on_reply runs on the calling thread, one reply at a time, while later calls are still in
  // flight. After an error no new call starts; returns the first error.
  absl::Status ForEachChunk(
      const std::string& method, const std::function<grpc::ByteBuffer(const Chunk&)>& request,
      const std::function<absl::Status(const Chunk&, const grpc::ByteBuffer&)>& on_reply);
  // The payload of one chunk's push, in the encoding options_.compression asks for (set in
  // *request); float32 chunks borrow the caller's memory.
  grpc::Slice EncodeGradient(absl::Span<const float> chunk, wire::PushRequest* request) const;
  // One blocking call to one server.
  absl::Status Call(int server, const std::string& method, const grpc::ByteBuffer& request,
                    grpc::ByteBuffer* reply);
  // Prefixes a failed call's status with the server's index and address.
  absl::Status Annotate(int server, const std::string& what, const absl::Status& status) const;

  // Immutable after construction.
  const std::vector<std::string> addresses_;
  const ShardingPlan plan_;
  const ClientIdentity identity_;
  const GrpcPsClientOptions options_;
  // stubs_[server][k]: one stub per channel of the server's pool.
  std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>> stubs_;

  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_GRPC_PS_CLIENT_H_
