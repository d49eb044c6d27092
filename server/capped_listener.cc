#include "server/capped_listener.h"

#include <glog/logging.h>
#include <grpcpp/server_posix.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace monsoon {
namespace {

absl::Status SocketError(const std::string& what, const std::string& host) {
  return absl::UnavailableError(absl::StrCat("cannot ", what, " on ", host, ":0: ",
                                             std::strerror(errno)));
}

// The HTTP/2 frame a refused connection gets before it is closed: a GOAWAY (no stream
// processed, ENHANCE_YOUR_CALM) with `why` as its debug data, for a tool that reads it. It comes
// where a server's preface (a SETTINGS frame) should, so a gRPC client fails the connection at
// once with "Failed parsing HTTP/2", which FromGrpcStatus (proto/grpc_status.h) explains.
std::string RefusalFrames(const std::string& why) {
  const size_t length = 8 + why.size();
  std::string frames;
  frames += {static_cast<char>(length >> 16), static_cast<char>(length >> 8),
             static_cast<char>(length), 0x7, 0, 0, 0, 0, 0};  // GOAWAY, stream 0
  frames += {0, 0, 0, 0, 0, 0, 0, 0xb};  // last stream 0; error 11, ENHANCE_YOUR_CALM
  return frames + why;
}

// A listening socket bound to the first address `host` resolves to, on an ephemeral port.
absl::StatusOr<int> BindListening(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = getaddrinfo(host.c_str(), "0", &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ": ", gai_strerror(resolved)));
  }
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  const bool bound = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0 &&
                     bind(fd, found->ai_addr, found->ai_addrlen) == 0 && listen(fd, 1024) == 0;
  freeaddrinfo(found);
  if (!bound) {
    const absl::Status error = SocketError("listen", host);
    if (fd >= 0) close(fd);
    return error;
  }
  return fd;
}

absl::StatusOr<int> PortOf(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return absl::InternalError(absl::StrCat("getsockname: ", std::strerror(errno)));
  }
  const in_port_t port = address.ss_family == AF_INET6
                             ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                             : reinterpret_cast<sockaddr_in*>(&address)->sin_port;
  return ntohs(port);
}

ino_t InodeOf(int fd) {
  struct stat info {};
  return fstat(fd, &info) == 0 && S_ISSOCK(info.st_mode) ? info.st_ino : 0;
}

// "ipv4:HOST:PORT" or "ipv6:[HOST]:PORT" for a socket address; empty for other families.
std::string AddressText(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &v4.sin_addr, host, sizeof(host));
    return absl::StrCat("ipv4:", host, ":", ntohs(v4.sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof(host));
    return absl::StrCat("ipv6:[", host, "]:", ntohs(v6.sin6_port));
  }
  return "";
}

bool IsPowerOfTen(int n) {
  while (n % 10 == 0) n /= 10;
  return n == 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CappedListener>> CappedListener::Listen(const std::string& host,
                                                                       int max_connections,
                                                                       std::string name) {
  absl::StatusOr<int> fd = BindListening(host);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<int> port = PortOf(*fd);
  if (!port.ok()) {
    close(*fd);
    return port.status();
  }
  return std::unique_ptr<CappedListener>(
      new CappedListener(*fd, *port, max_connections, std::move(name)));
}

CappedListener::CappedListener(int fd, int port, int max_connections, std::string name)
    : listen_fd_(fd), port_(port), max_connections_(max_connections), name_(std::move(name)) {}

CappedListener::~CappedListener() {
  shutdown(listen_fd_, SHUT_RDWR);  // wakes the accept thread
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
}

void CappedListener::Start(grpc::Server* server) {
  thread_ = std::thread([this, server] { AcceptLoop(server); });
}

void CappedListener::AcceptLoop(grpc::Server* server) {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        absl::SleepFor(absl::Milliseconds(10));  // out of descriptors: let some close
        continue;
      }
      return;  // shut down
    }
    ForgetClosed();
    if (static_cast<int>(held_.size()) >= max_connections_) {
      Refuse(fd);
      continue;
    }
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    held_.push_back({fd, InodeOf(fd)});
    grpc::AddInsecureChannelFromFd(server, fd);
  }
}

std::string CappedListener::PeerAddress(const std::string& grpc_peer) {
  int fd = -1;
  if (!absl::StartsWith(grpc_peer, "fd:") || !absl::SimpleAtoi(grpc_peer.substr(3), &fd)) {
    return grpc_peer;
  }
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return grpc_peer;
  const std::string text = AddressText(address);
  return text.empty() ? grpc_peer : text;
}

void CappedListener::ForgetClosed() {
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [](const Held& held) { return InodeOf(held.fd) != held.inode; }),
              held_.end());
}

void CappedListener::Refuse(int fd) {
  const int refused = ++refused_;
  char discard[4096];  // what the client sent already: closed unread, it would reset the
  while (recv(fd, discard, sizeof(discard), 0) > 0) {  // connection before the client reads
  }
  const std::string frames = RefusalFrames(absl::StrCat(
      name_, " refused this connection: over its cap of ", max_connections_,
      " connections open at once"));
  send(fd, frames.data(), frames.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
  if (IsPowerOfTen(refused)) {
    LOG(WARNING) << name_ << ": refused " << refused << " connection" << (refused > 1 ? "s" : "")
                 << " over its cap of " << max_connections_
                 << " open at once (a flood of connections?)";
  }
}

}  // namespace monsoon
