// A TCP listener for a plaintext gRPC server that holds at most a fixed number of connections
// open at once. gRPC (1.51) accepts every connection it is offered; this accepts them itself and
// hands gRPC only those under the cap, closing the rest at once.
#ifndef MONSOON_SERVER_CAPPED_LISTENER_H_
#define MONSOON_SERVER_CAPPED_LISTENER_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace monsoon {

class CappedListener {
 public:
  // Binds host:0 (an ephemeral port) and listens; `name` prefixes the log lines.
  static absl::StatusOr<std::unique_ptr<CappedListener>> Listen(const std::string& host,
                                                                int max_connections,
                                                                std::string name);
  // Stops accepting. Connections already handed to gRPC stay with it.
  ~CappedListener();

  int port() const { return port_; }
  // Starts accepting on a thread of its own, handing each connection under the cap to
  // `server` (borrowed; must outlive this listener), which must have been built without
  // credentials of its own (plaintext).
  void Start(grpc::Server* server);
  // Connections closed on arrival because `max_connections` were open.
  int refused() const { return refused_.load(); }
  // gRPC names a handed-over connection's peer "fd:N"; this is its address in gRPC's usual
  // form ("ipv4:127.0.0.1:54234", "ipv6:[::1]:54234"), read while the connection is open.
  // Other peers are returned unchanged.
  static std::string PeerAddress(const std::string& grpc_peer);

 private:
  // A connection handed to gRPC: its descriptor and the socket's inode, which tells it from a
  // later file that reuses the number once gRPC has closed it.
  struct Held {
    int fd;
    ino_t inode;
  };

  CappedListener(int fd, int port, int max_connections, std::string name);
  void AcceptLoop(grpc::Server* server);
  // Forgets held connections whose descriptors gRPC has closed.
  void ForgetClosed();
  void Refuse(int fd);

  const int listen_fd_;
  const int port_;
  const int max_connections_;
  const std::string name_;
  std::vector<Held> held_;  // the accept thread's alone
  std::atomic<int> refused_{0};
  std::thread thread_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_CAPPED_LISTENER_H_
