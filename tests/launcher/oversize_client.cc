// An attacker for the security tests: sends N concurrent Push calls of M MiB each, without a
// job token (or with TOKEN, a wrong one), to a Monsoon server, and prints how each ended. It is
// a client of the real wire protocol (gRPC's generic stub), not of Monsoon's client library,
// so nothing on this side limits what it sends.
//
//   oversize_client HOST:PORT N MIB [TOKEN]
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: oversize_client HOST:PORT N MIB [TOKEN]\n";
    return 2;
  }
  const std::string token = argc == 5 ? argv[4] : "";
  const std::string address = argv[1];
  const int calls = std::atoi(argv[2]);
  const size_t bytes = static_cast<size_t>(std::atol(argv[3])) << 20;
  // One payload, shared by reference by every call.
  const grpc::Slice payload(std::string(bytes, '\x7f'));
  std::vector<std::thread> threads;
  for (int i = 0; i < calls; ++i) {
    threads.emplace_back([&, i] {
      // One connection per call, as separate attackers would have.
      grpc::ChannelArguments args;
      args.SetMaxSendMessageSize(-1);
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetInt("monsoon.attacker", i);
      auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
      grpc::GenericStub stub(channel);
      grpc::Slice slice = payload;
      grpc::ByteBuffer request(&slice, 1), response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      if (!token.empty()) context.AddMetadata("x-monsoon-token", token);
      std::mutex mu;
      std::condition_variable done;
      bool finished = false;
      grpc::Status status;
      stub.UnaryCall(&context, "/monsoon.wire.ParameterServer/Push", grpc::StubOptions(), &request,
                     &response, [&](grpc::Status s) {
                       std::lock_guard<std::mutex> lock(mu);
                       status = std::move(s);
                       finished = true;
                       done.notify_one();
                     });
      std::unique_lock<std::mutex> lock(mu);
      done.wait(lock, [&] { return finished; });
      std::cout << "call " << i << ": " << status.error_code() << " " << status.error_message()
                << std::endl;
    });
  }
  for (std::thread& t : threads) t.join();
  return 0;
}
