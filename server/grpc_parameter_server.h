// The gRPC adapter in front of a ParameterServer: decodes frames, checks the job token,
// calls the logic, encodes replies; the same for chunk calls that come through the shared
// segments of clients on this host (server/client_segments.h). No training logic lives here.
#ifndef MONSOON_SERVER_GRPC_PARAMETER_SERVER_H_
#define MONSOON_SERVER_GRPC_PARAMETER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/run/job_secrets.h"
#include "core/run/run_dir.h"
#include "server/parameter_server.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace monsoon {

class CappedListener;
class ParameterServerService;
class UpdateCalls;

// What a server lets its connections take, sized for a server of `plan` with `clients` clients
// (workers and evaluator), each with up to `max_in_flight` chunk calls in flight to it over
// `channels` connections (transport.channels_per_server).
struct ServerLimits {
  // Twice what the clients can legitimately have in flight at once (chunks of the largest
  // size), plus the transport's own: 16 of the largest messages, at least 8 MiB and at most
  // 64 MiB.
  size_t memory_quota_bytes = 0;
  // A client's window and its heartbeat, with room to spare; a client over it waits.
  int max_streams_per_connection = 0;
  // Connections open at once (plaintext servers): twice each client's channels (a restarted
  // client's new connections may arrive before its old ones close; at least four per client)
  // and 16 for tools; one more is closed as it arrives. No job's own clients reach it.
  int max_connections = 0;
  static ServerLimits For(const ShardingPlan& plan, int clients, int max_in_flight,
                          int channels = 1);
  static int MaxConnections(int clients, int channels);
};

// Serves one ParameterServer (borrowed; must outlive this object) over gRPC.
class GrpcParameterServer {
 public:
  // Binds host:0 (an ephemeral port) and starts serving, over TLS when secrets.tls().
  // Requests whose token differs from secrets.token fail with UNAUTHENTICATED; messages larger
  // than the biggest chunk (plus framing) are refused by gRPC with RESOURCE_EXHAUSTED; pushes
  // without a sequence number with INVALID_ARGUMENT.
  //
  // Pushes and exchanges, the calls that carry chunks, are refused for their token before
  // their message is read. gRPC reads the other calls' (small) messages before any check
  // runs; what bounds the memory unauthenticated or oversized requests can take is
  // limits.memory_quota_bytes (a gRPC resource quota on everything its transport buffers; over
  // it, gRPC resets the streams holding the most). Without TLS, at most
  // limits.max_connections connections are open at once, and one that never answers the
  // server's keepalive ping is closed within 15 s; with TLS, connections that do not complete
  // their handshake within 5 s are closed. Connections idle (no call) for 5 minutes are closed.
  static absl::StatusOr<std::unique_ptr<GrpcParameterServer>> Start(ParameterServer* logic,
                                                                    const std::string& host,
                                                                    const JobSecrets& secrets,
                                                                    const ServerLimits& limits);
  ~GrpcParameterServer();

  // "host:port" clients connect to.
  const std::string& address() const { return address_; }
  // Fails pulls still waiting for a version or clock, stops accepting calls and waits (up
  // to a few seconds) for those in flight.
  void Shutdown();

 private:
  GrpcParameterServer() = default;
  ParameterServer* logic_ = nullptr;  // borrowed
  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<UpdateCalls> update_calls_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<CappedListener> listener_;  // null with TLS
  std::string address_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_GRPC_PARAMETER_SERVER_H_
