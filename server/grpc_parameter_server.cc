#include "server/grpc_parameter_server.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "glog/logging.h"
#include "proto/channel_security.h"
#include "proto/data_position.h"
#include "proto/frame.h"
#include "proto/grpc_status.h"
#include "proto/monsoon.grpc.pb.h"
#include "proto/role_wire.h"
#include "server/capped_listener.h"
#include "server/client_segments.h"
#include "server/push_decoder.h"
#include "server/stats_wire.h"

namespace monsoon {

namespace wire = ::monsoon::wire;
using RawService = wire::ParameterServer::WithRawCallbackMethod_Hello<
    wire::ParameterServer::WithRawCallbackMethod_Pull<
        wire::ParameterServer::WithGenericMethod_Push<
            wire::ParameterServer::WithGenericMethod_Exchange<
                wire::ParameterServer::WithRawCallbackMethod_Stats<
                    wire::ParameterServer::WithRawCallbackMethod_Finish<
                        wire::ParameterServer::WithRawCallbackMethod_Heartbeat<
                            wire::ParameterServer::Service>>>>>>>;

constexpr char kPushMethod[] = "/monsoon.wire.ParameterServer/Push";
constexpr char kExchangeMethod[] = "/monsoon.wire.ParameterServer/Exchange";

// A push's or exchange's origin from its header; InvalidArgument without a sequence number
// (every worker numbers its pushes, which is what makes them exactly-once).
absl::StatusOr<PushOrigin> OriginOf(const wire::ChunkUpdateHeader& request) {
  if (request.sequence() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("push for chunk ", request.chunk_id(),
                                                   " from worker ", request.worker_index(),
                                                   " carries no sequence number"));
  }
  PushOrigin origin;
  origin.incarnation = request.incarnation();
  origin.sequence = request.sequence();
  origin.position = FromWire(request.position());
  origin.epoch = request.epoch();
  return origin;
}

// The largest message a legitimate client sends or receives: the largest chunk, and framing.
size_t LargestMessageBytes(const ShardingPlan& plan) {
  return plan.max_chunk_size() * sizeof(float) + (64 << 10);
}

// The longest a pull may wait for its condition when the client sent no deadline.
constexpr absl::Duration kMaxPullWait = absl::Minutes(10);

// Each handler runs on a gRPC callback thread, or on the thread of the client's shared segment
// for the chunk calls that came through it (ServeSegmentCall; the segment, which only a caller
// with the token got, stands for the token). All but Pull finish their call before returning;
// a Pull that must wait for a version or clock is answered later, by the thread whose push (or
// finish, or the deadline) satisfies it, so no such thread ever blocks. Push and Exchange
// through gRPC are served by UpdateCalls below.
class ParameterServerService final : public RawService {
 public:
  ParameterServerService(ParameterServer* logic, std::string token)
      : logic_(logic),
        token_(std::move(token)),
        segments_(logic->plan(), logic->index(),
                  [this](SegmentRequest request, const std::shared_ptr<SharedSegment>& segment,
                         SegmentAnswer answer) {
                    ServeSegmentCall(std::move(request), segment, answer);
                  }) {}

  // Stops taking calls through the clients' segments.
  void CloseSegments() { segments_.Close(); }

  // OK when the call carries this job's token.
  absl::Status Authorize(const grpc::CallbackServerContext& ctx) const {
    const auto& metadata = ctx.client_metadata();
    auto it = metadata.find(kTokenMetadataKey);
    if (it == metadata.end()) {
      return absl::UnauthenticatedError("missing job token (x-monsoon-token)");
    }
    if (!ConstantTimeEquals(std::string(it->second.data(), it->second.size()), token_)) {
      return absl::UnauthenticatedError("wrong job token: this server belongs to another job");
    }
    return absl::OkStatus();
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                      grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::HeartbeatRequest request;
      auto frame = ReceivedFrame::Parse(*req, &request);
      if (!frame.ok()) return frame.status();
      MONSOON_ASSIGN_OR_RETURN(const RoleKind role, RoleFromWire(request.role(), "heartbeat"));
      MONSOON_RETURN_IF_ERROR(logic_->Heartbeat(role, request.index(), request.incarnation()));
      *resp = EncodeFrame(wire::HeartbeatResponse());
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Hello(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::HelloRequest request;
      auto frame = ReceivedFrame::Parse(*req, &request);
      if (!frame.ok()) return frame.status();
      MONSOON_ASSIGN_OR_RETURN(const RoleKind role, RoleFromWire(request.role(), "hello"));
      MONSOON_ASSIGN_OR_RETURN(ResumePoint resume,
                               logic_->Hello(request.plan_fingerprint(), role,
                                             request.index(), request.incarnation(),
                                             CappedListener::PeerAddress(ctx->peer())));
      wire::HelloResponse response;
      response.set_resume_sequence(resume.sequence);
      ToWire(resume.position, response.mutable_resume_position());
      response.set_server_index(logic_->index());
      response.set_plan_fingerprint(logic_->plan().fingerprint());
      if (!request.host_identity().empty()) {
        const ClientSegments::Offer offer = segments_.OfferTo(
            role, request.index(), request.host_identity(), request.segment_slots());
        wire::SegmentOffer* segment = response.mutable_segment();
        segment->set_id(offer.id);
        segment->set_pid(getpid());
        segment->set_fd(offer.fd);
        segment->set_bytes(offer.layout.bytes());
        segment->set_slots(offer.layout.slots);
        segment->set_slot_bytes(offer.layout.slot_bytes);
        if (offer.id != 0) OfferWindow(segment);
      }
      *resp = EncodeFrame(response);
      return absl::OkStatus();
    });
  }

  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                 grpc::ByteBuffer* resp) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const absl::Status authorized = Authorize(*ctx);
    if (!authorized.ok()) {
      reactor->Finish(ToGrpcStatus(authorized));
      return reactor;
    }
    StartPull(*req, std::min(absl::FromChrono(ctx->deadline()), absl::Now() + kMaxPullWait),
              nullptr, [reactor, resp](const absl::StatusOr<grpc::ByteBuffer>& reply) {
                if (reply.ok()) *resp = *reply;
                reactor->Finish(ToGrpcStatus(reply.status()));
              });
    return reactor;
  }

  // Serves a pull: `answer` gets its reply once the chunk meets the request's condition, or an
  // error (at `deadline` at the latest), on whichever thread that happens. `via`: the segment
  // the call came through (null: gRPC).
  void StartPull(const grpc::ByteBuffer& req, absl::Time deadline, const SharedSegment* via,
                 SegmentAnswer answer) {
    wire::PullRequest request;
    auto frame = ReceivedFrame::Parse(req, &request);
    if (!frame.ok()) {
      answer(frame.status());
      return;
    }
    const int worker = request.role() == wire::ROLE_WORKER ? request.index() : kNotAWorker;
    if (request.role() == wire::ROLE_WORKER) {
      const absl::Status known = logic_->CheckWorker("pull", worker);
      if (!known.ok()) {
        answer(known);
        return;
      }
    }
    absl::StatusOr<std::shared_ptr<SharedSegment>> segment = ReplySegment(request, via);
    if (!segment.ok()) {
      answer(segment.status());
      return;
    }
    PullCondition condition;
    condition.min_version = request.min_version();
    condition.min_clock = request.min_clock();
    const int chunk_id = request.chunk_id();
    const uint32_t slot = request.segment().reply_slot();
    const bool from_window = request.from_window();
    logic_->WhenReady(chunk_id, condition, deadline,
                      [this, answer = std::move(answer), chunk_id, worker, slot, from_window,
                       segment = *std::move(segment)](absl::Status ready) {
                        if (!ready.ok()) {
                          answer(ready);
                        } else {
                          answer(ReadChunk(chunk_id, worker, segment.get(), slot, from_window));
                        }
                      });
  }

  // A call that came through `segment`, its client's.
  void ServeSegmentCall(SegmentRequest request, const std::shared_ptr<SharedSegment>& segment,
                        const SegmentAnswer& answer) {
    if (request.method == SegmentMethod::kPull) {
      StartPull(request.frame, std::min(request.deadline, absl::Now() + kMaxPullWait),
                segment.get(), answer);
      return;
    }
    grpc::ByteBuffer reply;
    const absl::Status served = request.method == SegmentMethod::kPush
                                    ? Push(&request.frame, &reply, segment.get())
                                    : Exchange(&request.frame, &reply, segment.get());
    if (served.ok()) {
      answer(std::move(reply));
    } else {
      answer(served);
    }
  }

  // Push and Exchange: `via` is the segment the call came through (null: gRPC).
  absl::Status Push(const grpc::ByteBuffer* req, grpc::ByteBuffer* resp, const SharedSegment* via) {
    wire::PushRequest request;
    auto frame = ReceivedFrame::Parse(*req, &request);
    if (!frame.ok()) return frame.status();
    const wire::ChunkUpdateHeader& update = request.update();
    CountWindowReads(update.window_reads());
    MONSOON_ASSIGN_OR_RETURN(const std::shared_ptr<SharedSegment> segment,
                             UpdateSegment(update, request.segment(), via));
    MONSOON_ASSIGN_OR_RETURN(const PayloadView payload,
                             RequestPayload(update, request.segment(), segment.get(), *frame));
    // Reused per gRPC thread: an encoded gradient is decoded straight into it.
    thread_local std::vector<float> scratch;
    MONSOON_ASSIGN_OR_RETURN(
        const absl::Span<const float> gradient,
        DecodeGradient(request, payload, logic_->plan().max_chunk_size(), &scratch));
    MONSOON_ASSIGN_OR_RETURN(PushOrigin origin, OriginOf(update));
    if (request.pull_after()) MONSOON_RETURN_IF_ERROR(logic_->PullAfterPushAllowed());
    auto result = logic_->Push(update.chunk_id(), update.worker_index(), update.base_version(),
                               gradient, origin);
    if (!result.ok()) return result.status();
    wire::PushResponse response;
    response.set_version(result->version);
    response.set_staleness(result->staleness);
    response.set_applied(result->applied);
    response.set_duplicate(result->duplicate);
    if (!request.pull_after() || request.pull_from_window()) {
      *resp = EncodeFrame(response);
      return absl::OkStatus();
    }
    MONSOON_ASSIGN_OR_RETURN(ChunkSnapshot snapshot,
                             logic_->Snapshot(update.chunk_id(), update.worker_index()));
    response.set_num_floats(snapshot.values->size());
    response.set_pulled_version(snapshot.info.version);
    response.set_slowest_clock(snapshot.info.slowest_clock);
    MONSOON_ASSIGN_OR_RETURN(grpc::Slice values,
                             ReplyPayload(std::move(snapshot.values),
                                          request.segment().reply() ? segment.get() : nullptr,
                                          request.segment().reply_slot()));
    response.set_payload_in_segment(request.segment().reply());
    *resp = EncodeFrame(response, std::move(values));
    return absl::OkStatus();
  }

  absl::Status Exchange(const grpc::ByteBuffer* req, grpc::ByteBuffer* resp,
                        const SharedSegment* via) {
    wire::ExchangeRequest request;
    auto frame = ReceivedFrame::Parse(*req, &request);
    if (!frame.ok()) return frame.status();
    const wire::ChunkUpdateHeader& update = request.update();
    CountWindowReads(update.window_reads());
    const wire::SegmentUse& use = request.segment();
    MONSOON_ASSIGN_OR_RETURN(const std::shared_ptr<SharedSegment> segment,
                             UpdateSegment(update, use, via));
    MONSOON_ASSIGN_OR_RETURN(const PayloadView payload,
                             RequestPayload(update, use, segment.get(), *frame));
    if (payload.bytes() != update.num_floats() * sizeof(float) ||
        update.num_floats() > logic_->plan().max_chunk_size()) {
      return absl::InvalidArgumentError(absl::StrCat("exchange header says ", update.num_floats(),
                                                     " floats but carries ", payload.bytes(),
                                                     " bytes"));
    }
    MONSOON_ASSIGN_OR_RETURN(PushOrigin origin, OriginOf(update));
    thread_local std::vector<float> scratch;
    MONSOON_ASSIGN_OR_RETURN(const absl::Span<const float> weights,
                             payload.Floats(update.num_floats(), &scratch));
    grpc::Slice reply;
    absl::Span<float> difference;
    if (use.reply()) {
      MONSOON_ASSIGN_OR_RETURN(difference,
                               segments_.ReplySlot(*segment, use.reply_slot(), weights.size()));
    } else {
      float* fresh = nullptr;
      reply = AllocateFloats(weights.size(), &fresh);
      difference = absl::MakeSpan(fresh, weights.size());
    }
    auto result = logic_->Exchange(update.chunk_id(), update.worker_index(), update.base_version(),
                                   weights, difference, origin);
    if (!result.ok()) return result.status();
    wire::ExchangeResponse response;
    response.set_chunk_id(update.chunk_id());
    response.set_version(result->version);
    response.set_num_floats(weights.size());
    response.set_staleness(result->staleness);
    response.set_duplicate(result->duplicate);
    response.set_payload_in_segment(use.reply());
    *resp = EncodeFrame(response, std::move(reply));
    return absl::OkStatus();
  }

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override {
    return Respond(ctx, [&]() -> absl::Status {
      wire::StatsResponse response;
      ToWire(logic_->Stats(), &response);
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
      MONSOON_ASSIGN_OR_RETURN(const RoleKind role, RoleFromWire(request.role(), "finish"));
      CountWindowReads(request.window_reads());
      const absl::Status finished = logic_->Finish(role, request.index());
      if (!finished.ok()) return finished;
      *resp = EncodeFrame(wire::FinishResponse());
      return absl::OkStatus();
    });
  }

 private:
  // Adds the server's chunk window to a segment's offer, when the job has one; a window that
  // cannot be made is logged, and pulls then go through calls.
  void OfferWindow(wire::SegmentOffer* offer) {
    const absl::StatusOr<const ChunkWindow*> window = logic_->Window();
    if (!window.ok()) {
      LOG_FIRST_N(WARNING, 1) << "server " << logic_->index()
                              << ": no chunk window, pulls go through calls: " << window.status();
      return;
    }
    if (*window == nullptr) return;
    offer->set_window_fd((*window)->fd());
    offer->set_window_bytes((*window)->bytes());
  }

  // Counts the pulls a client reports having read from the chunk window.
  void CountWindowReads(const wire::WindowReads& reads) {
    if (reads.reads() > 0) logic_->RecordWindowReads(reads.reads(), reads.bytes());
  }

  // Checks the token, runs `handle` and finishes the call with its status.
  template <typename Handler>
  grpc::ServerUnaryReactor* Respond(grpc::CallbackServerContext* ctx, Handler handle) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    const absl::Status authorized = Authorize(*ctx);
    reactor->Finish(ToGrpcStatus(authorized.ok() ? handle() : authorized));
    return reactor;
  }

  // The chunk's current values as a Pull reply to `worker` (or kNotAWorker): into slot `slot`
  // of the client's segment when `segment` is given, else a frame holding a snapshot (no copy).
  absl::StatusOr<grpc::ByteBuffer> ReadChunk(int chunk_id, int worker, const SharedSegment* segment,
                                             uint32_t slot, bool from_window) {
    MONSOON_ASSIGN_OR_RETURN(ChunkSnapshot snapshot, logic_->Snapshot(chunk_id, worker));
    wire::PullResponse response;
    response.set_chunk_id(chunk_id);
    response.set_num_floats(snapshot.values->size());
    response.set_version(snapshot.info.version);
    response.set_slowest_clock(snapshot.info.slowest_clock);
    if (from_window && logic_->HasWindow()) {
      response.set_payload_in_window(true);
      return EncodeFrame(response);
    }
    response.set_payload_in_segment(segment != nullptr);
    MONSOON_ASSIGN_OR_RETURN(grpc::Slice values,
                             ReplyPayload(std::move(snapshot.values), segment, slot));
    return EncodeFrame(response, std::move(values));
  }

  // The segment `role` `index`'s call uses when `uses` it (else null), the one named `id`. A
  // call that came through segment `via` (null: through gRPC) must use that one: its client's.
  absl::StatusOr<std::shared_ptr<SharedSegment>> SegmentOf(RoleKind role, int index, bool uses,
                                                           uint64_t id, const SharedSegment* via) {
    if (!uses) {
      if (via == nullptr) return nullptr;
      return absl::InvalidArgumentError(
          "a call through a shared segment must keep its payloads in it");
    }
    MONSOON_ASSIGN_OR_RETURN(std::shared_ptr<SharedSegment> segment,
                             segments_.Find(role, index, id));
    if (via != nullptr && segment.get() != via) {
      return absl::PermissionDeniedError(absl::StrCat(
          "a call through another client's shared segment names ", RoleId{role, index}.Describe()));
    }
    return segment;
  }

  // The segment a pull's reply goes to (null when it goes in the frame).
  absl::StatusOr<std::shared_ptr<SharedSegment>> ReplySegment(const wire::PullRequest& request,
                                                              const SharedSegment* via) {
    MONSOON_ASSIGN_OR_RETURN(const RoleKind role, RoleFromWire(request.role(), "pull"));
    return SegmentOf(role, request.index(), request.segment().reply(), request.segment().id(), via);
  }

  // The segment a push's or exchange's payloads use (null when they use none).
  absl::StatusOr<std::shared_ptr<SharedSegment>> UpdateSegment(
      const wire::ChunkUpdateHeader& update, const wire::SegmentUse& use,
      const SharedSegment* via) {
    return SegmentOf(RoleKind::kWorker, update.worker_index(), use.request() || use.reply(),
                     use.id(), via);
  }

  // Where an update's payload lies: its request slot in `segment`, or the frame.
  absl::StatusOr<PayloadView> RequestPayload(const wire::ChunkUpdateHeader& update,
                                             const wire::SegmentUse& use,
                                             const SharedSegment* segment,
                                             const ReceivedFrame& frame) const {
    if (!use.request()) return PayloadView(frame);
    return segments_.RequestPayload(*segment, use.request_slot(), use.request_bytes());
  }

  // A reply's values: copied into slot `slot` of `segment` (an empty frame payload), or
  // shared into the frame when `segment` is null.
  absl::StatusOr<grpc::Slice> ReplyPayload(std::shared_ptr<const std::vector<float>> values,
                                           const SharedSegment* segment, uint32_t slot) const {
    if (segment == nullptr) return ShareFloats(std::move(values));
    MONSOON_ASSIGN_OR_RETURN(absl::Span<float> into,
                             segments_.ReplySlot(*segment, slot, values->size()));
    std::copy(values->begin(), values->end(), into.begin());
    return grpc::Slice();
  }

  ParameterServer* const logic_;  // borrowed
  const std::string token_;
  ClientSegments segments_;
};

// One Push or Exchange call: a stream of one request and one reply. Served as a generic
// stream, unlike the other calls, so that the token is checked from the call's metadata before
// its message is read: gRPC reads a unary call's whole message before any handler runs. A
// caller without the token is refused having sent at most a flow-control window of bytes.
class UpdateCallReactor final : public grpc::ServerGenericBidiReactor {
 public:
  using Handler = absl::Status (ParameterServerService::*)(const grpc::ByteBuffer*,
                                                           grpc::ByteBuffer*, const SharedSegment*);
  UpdateCallReactor(ParameterServerService* service, Handler handler)
      : service_(service), handler_(handler) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call carried no message"));
      return;
    }
    const absl::Status handled = (service_->*handler_)(&request_, &response_, nullptr);
    if (!handled.ok()) {
      Finish(ToGrpcStatus(handled));
      return;
    }
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  ParameterServerService* const service_;  // borrowed
  const Handler handler_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

// Serves the calls ParameterServerService leaves generic: Push and Exchange.
class UpdateCalls final : public grpc::CallbackGenericService {
 public:
  explicit UpdateCalls(ParameterServerService* service) : service_(service) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    const absl::Status authorized = service_->Authorize(*ctx);
    if (!authorized.ok()) return Refuse(ToGrpcStatus(authorized));
    if (ctx->method() == kPushMethod) {
      return new UpdateCallReactor(service_, &ParameterServerService::Push);
    }
    if (ctx->method() == kExchangeMethod) {
      return new UpdateCallReactor(service_, &ParameterServerService::Exchange);
    }
    return Refuse(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                               absl::StrCat("no method ", ctx->method())));
  }

 private:
  // A reactor that finishes the call with `status` without reading it.
  static grpc::ServerGenericBidiReactor* Refuse(grpc::Status status) {
    class Refusal final : public grpc::ServerGenericBidiReactor {
     public:
      explicit Refusal(const grpc::Status& status) { Finish(status); }
      void OnDone() override { delete this; }
    };
    return new Refusal(status);
  }

  ParameterServerService* const service_;  // borrowed
};

ServerLimits ServerLimits::For(const ShardingPlan& plan, int clients, int max_in_flight,
                               int channels) {
  ServerLimits limits;
  const size_t largest = LargestMessageBytes(plan);
  const size_t transport = std::clamp(16 * largest, size_t{8} << 20, size_t{64} << 20);
  limits.memory_quota_bytes = 2 * static_cast<size_t>(clients) * max_in_flight * largest + transport;
  limits.max_streams_per_connection = max_in_flight + 16;
  limits.max_connections = MaxConnections(clients, channels);
  return limits;
}

int ServerLimits::MaxConnections(int clients, int channels) {
  return clients * std::max(4, 2 * channels) + 16;
}

absl::StatusOr<std::unique_ptr<GrpcParameterServer>> GrpcParameterServer::Start(
    ParameterServer* logic, const std::string& host, const JobSecrets& secrets,
    const ServerLimits& limits) {
  std::unique_ptr<GrpcParameterServer> server(new GrpcParameterServer());
  server->logic_ = logic;
  server->service_ = std::make_unique<ParameterServerService>(logic, secrets.token);
  server->update_calls_ = std::make_unique<UpdateCalls>(server->service_.get());
  const int max_message = static_cast<int>(LargestMessageBytes(logic->plan()));
  grpc::ServerBuilder builder;
  int port = 0;
  if (secrets.tls()) {
    builder.AddListeningPort(absl::StrCat(host, ":0"), ServerCredentialsFor(secrets), &port);
  } else {
    MONSOON_ASSIGN_OR_RETURN(server->listener_,
                             CappedListener::Listen(host, limits.max_connections,
                                                    absl::StrCat("server ", logic->index())));
    port = server->listener_->port();
  }
  builder.RegisterService(server->service_.get());
  builder.RegisterCallbackGenericService(server->update_calls_.get());
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  grpc::ResourceQuota quota(absl::StrCat("monsoon-server-", logic->index()));
  quota.Resize(limits.memory_quota_bytes);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_streams_per_connection);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 5 * 60 * 1000);
  // Accept the clients' keepalive pings (see GrpcPsClient) without calling them abusive.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":0"));
  }
  if (server->listener_ != nullptr) server->listener_->Start(server->server_.get());
  server->address_ = absl::StrCat(host, ":", port);
  return server;
}

GrpcParameterServer::~GrpcParameterServer() { Shutdown(); }

void GrpcParameterServer::Shutdown() {
  if (server_ == nullptr) return;
  listener_.reset();         // accepts no more connections
  service_->CloseSegments();  // nor calls through shared segments
  logic_->CancelWaiters();  // finishes every pull still waiting for a version or clock
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  server_->Wait();
  server_.reset();
}

}  // namespace monsoon
