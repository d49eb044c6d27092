#include "server/capped_listener.h"

#include <arpa/inet.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/grpc_status.h"

#include <catch2/catch.hpp>

namespace monsoon {
namespace {

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  return fd;
}

// True when the server closed `fd` within `ms` (end of file, or a reset, after what it sent
// first: a refused connection's HTTP/2 farewell).
bool ClosedByServer(int fd, int ms) {
  pollfd readable{fd, POLLIN, 0};
  char bytes[256];
  while (poll(&readable, 1, ms) > 0) {
    if (recv(fd, bytes, sizeof(bytes), 0) <= 0) return true;
  }
  return false;
}

TEST_CASE("CappedListener holds its cap of connections and admits more as they close",
          "[grpc][security]") {
  grpc::CallbackGenericService unimplemented;  // a server needs a service to start
  std::unique_ptr<grpc::Server> server =
      grpc::ServerBuilder().RegisterCallbackGenericService(&unimplemented).BuildAndStart();
  REQUIRE(server != nullptr);
  auto listener = CappedListener::Listen("127.0.0.1", 3, "test server");
  REQUIRE(listener.ok());
  (*listener)->Start(server.get());
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(Connect((*listener)->port()));
  const int over = Connect((*listener)->port());
  CHECK(ClosedByServer(over, 2000));
  CHECK((*listener)->refused() == 1);
  for (int fd : held) CHECK_FALSE(ClosedByServer(fd, 100));

  close(held[0]);  // gRPC sees the end of file and closes its side
  // A refused attempt is closed at once, so each waits 100 ms before the next: 5 s in all
  // for gRPC to notice the end of file.
  const int admitted = [&] {
    for (int attempt = 0; attempt < 50; ++attempt) {
      const int fd = Connect((*listener)->port());
      if (!ClosedByServer(fd, 100)) return fd;
      close(fd);
      usleep(100 * 1000);
    }
    return -1;
  }();
  CHECK(admitted >= 0);
  for (int fd : {over, held[1], held[2], admitted}) close(fd);
  listener->reset();
  server->Shutdown();
}

TEST_CASE("CappedListener: a gRPC client refused over the cap says why",
          "[grpc][security]") {
  grpc::CallbackGenericService unimplemented;
  std::unique_ptr<grpc::Server> server =
      grpc::ServerBuilder().RegisterCallbackGenericService(&unimplemented).BuildAndStart();
  REQUIRE(server != nullptr);
  auto listener = CappedListener::Listen("127.0.0.1", 1, "server 3");
  REQUIRE(listener.ok());
  (*listener)->Start(server.get());
  const int held = Connect((*listener)->port());
  REQUIRE_FALSE(ClosedByServer(held, 100));
  grpc::GenericStub stub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*listener)->port()),
                                             grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice byte("x");
  grpc::ByteBuffer request(&byte, 1), reply;
  grpc::Status status;
  std::mutex mu;
  std::condition_variable done;
  bool finished = false;
  stub.UnaryCall(&context, "/monsoon.Test/Call", grpc::StubOptions(), &request, &reply,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = s;
                   finished = true;
                   done.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  done.wait(lock, [&] { return finished; });
  const absl::Status seen = FromGrpcStatus(status);
  CHECK(absl::IsUnavailable(seen));
  CHECK_THAT(std::string(seen.message()),
             Catch::Contains("the server refused the connection at once: it was over its cap of "
                             "connections open at once"));
  close(held);
}

TEST_CASE("CappedListener names a handed-over connection's peer by its address", "[grpc]") {
  auto listener = CappedListener::Listen("127.0.0.1", 1, "test server");
  REQUIRE(listener.ok());
  const int client = Connect((*listener)->port());
  sockaddr_in mine{};
  socklen_t length = sizeof(mine);
  REQUIRE(getsockname(client, reinterpret_cast<sockaddr*>(&mine), &length) == 0);
  // The client's own descriptor stands in for the server's end: its peer is the listener.
  CHECK(CappedListener::PeerAddress(absl::StrCat("fd:", client)) ==
        absl::StrCat("ipv4:127.0.0.1:", (*listener)->port()));
  CHECK(CappedListener::PeerAddress("ipv4:10.0.0.1:5") == "ipv4:10.0.0.1:5");
  close(client);
}

}  // namespace
}  // namespace monsoon
