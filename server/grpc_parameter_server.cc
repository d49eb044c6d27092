#include "server/grpc_parameter_server.h"

#include <grpcpp/grpcpp.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/frame.h"
#include "proto/grpc_status.h"
#include "proto/monsoon.grpc.pb.h"

namespace monsoon {

namespace wire = ::monsoon::wire;
using RawService = wire::ParameterServer::WithRawCallbackMethod_Hello<
    wire::ParameterServer::WithRawCallbackMethod_Pull<
        wire::ParameterServer::WithRawCallbackMethod_Push<
            wire::ParameterServer::WithRawCallbackMethod_Stats<
                wire::ParameterServer::WithRawCallbackMethod_Finish<
                    wire::ParameterServer::Service>>>>>;

// Each handler runs on a gRPC callback thread and finishes its reactor before returning.
class ParameterServerService final : public RawService {
 public:
  ParameterServerService(ParameterServer* logic, std::string token)
      : logic_(logic), token_(std::move(token)) {}

  grpc::ServerUnaryReactor* Hello(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::HelloRequest request;
      auto frame = ReceivedFrame::Parse(*req, &request);
      if (!frame.ok()) return frame.status();
      const absl::Status hello = logic_->Hello(request.plan_fingerprint());
      if (!hello.ok()) return hello;
      wire::HelloResponse response;
      response.set_server_index(logic_->index());
      response.set_plan_fingerprint(logic_->plan().fingerprint());
      for (const Chunk& c : logic_->plan().ChunksOf(logic_->index())) {
        response.add_chunk_ids(c.id);
      }
      *resp = EncodeFrame(response);
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                 grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::PullRequest request;
      auto frame = ReceivedFrame::Parse(*req, &request);
      if (!frame.ok()) return frame.status();
      auto size = logic_->ChunkSize(request.chunk_id());
      if (!size.ok()) return size.status();
      float* values = nullptr;
      grpc::Slice payload = AllocateFloats(*size, &values);
      auto version = logic_->Pull(request.chunk_id(), absl::MakeSpan(values, *size));
      if (!version.ok()) return version.status();
      wire::PullResponse response;
      response.set_chunk_id(request.chunk_id());
      response.set_num_floats(*size);
      response.set_version(*version);
      *resp = EncodeFrame(response, std::move(payload));
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                 grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::PushRequest request;
      auto frame = ReceivedFrame::Parse(*req, &request);
      if (!frame.ok()) return frame.status();
      if (frame->payload_bytes() != request.num_floats() * sizeof(float)) {
        return absl::InvalidArgumentError(absl::StrCat("push header says ", request.num_floats(),
                                                       " floats but carries ",
                                                       frame->payload_bytes(), " bytes"));
      }
      // Reused per gRPC thread: decode straight from the received slices into it.
      thread_local std::vector<float> gradient;
      gradient.resize(request.num_floats());
      const absl::Status copied = frame->CopyPayloadTo(absl::MakeSpan(gradient));
      if (!copied.ok()) return copied;
      auto version = logic_->Push(request.chunk_id(), request.worker_index(),
                                  request.base_version(), gradient);
      if (!version.ok()) return version.status();
      wire::PushResponse response;
      response.set_version(*version);
      *resp = EncodeFrame(response);
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      const ServerStats s = logic_->Stats();
      wire::StatsResponse response;
      response.set_server_index(s.server_index);
      response.set_pushes_applied(s.pushes_applied);
      response.set_pushes_rejected(s.pushes_rejected);
      response.set_pulls_served(s.pulls_served);
      response.set_bytes_received(s.bytes_received);
      response.set_bytes_sent(s.bytes_sent);
      response.set_workers_finished(s.workers_finished);
      response.set_workers_expected(s.workers_expected);
      response.set_evaluator_finished(s.evaluator_finished);
      *resp = EncodeFrame(response);
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                   grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::FinishRequest request;
      auto frame = ReceivedFrame::Parse(*req, &request);
      if (!frame.ok()) return frame.status();
      if (request.role() != wire::ROLE_WORKER && request.role() != wire::ROLE_EVALUATOR) {
        return absl::InvalidArgumentError("finish from an unspecified role");
      }
      const absl::Status finished = logic_->Finish(
          request.role() == wire::ROLE_WORKER ? ClientRole::kWorker : ClientRole::kEvaluator,
          request.index());
      if (!finished.ok()) return finished;
      *resp = EncodeFrame(wire::FinishResponse());
      return absl::OkStatus();
    });
  }

 private:
  // Checks the token, runs `handle` and finishes the call with its status.
  template <typename Handler>
  grpc::ServerUnaryReactor* Respond(grpc::CallbackServerContext* ctx, Handler handle) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const auto& metadata = ctx->client_metadata();
    auto it = metadata.find(kTokenMetadataKey);
    if (it == metadata.end()) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing job token (x-monsoon-token)"));
    } else if (std::string(it->second.data(), it->second.size()) != token_) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                   "wrong job token: this server belongs to another job"));
    } else {
      reactor->Finish(ToGrpcStatus(handle()));
    }
    return reactor;
  }

  ParameterServer* const logic_;  // borrowed
  const std::string token_;
};

absl::StatusOr<std::unique_ptr<GrpcParameterServer>> GrpcParameterServer::Start(
    ParameterServer* logic, const std::string& host, const std::string& token) {
  std::unique_ptr<GrpcParameterServer> server(new GrpcParameterServer());
  server->service_ = std::make_unique<ParameterServerService>(logic, token);
  const int max_message =
      static_cast<int>(logic->plan().max_chunk_size() * sizeof(float)) + (64 << 10);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat(host, ":0"), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  // Accept the clients' keepalive pings (see GrpcPsClient) without calling them abusive.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":0"));
  }
  server->address_ = absl::StrCat(host, ":", port);
  return server;
}

GrpcParameterServer::~GrpcParameterServer() { Shutdown(); }

void GrpcParameterServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  server_->Wait();
  server_.reset();
}

}  // namespace monsoon
