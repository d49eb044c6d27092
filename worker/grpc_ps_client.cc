#include "worker/grpc_ps_client.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/compression.h"
#include "core/finite.h"
#include "core/status_macros.h"
#include "proto/channel_security.h"
#include "proto/data_position.h"
#include "proto/frame.h"
#include "proto/grpc_status.h"
#include "proto/monsoon.pb.h"
#include "proto/role_wire.h"
#include "server/stats_wire.h"
#include "worker/chunk_call_window.h"

namespace monsoon {
namespace {

constexpr char kHello[] = "/monsoon.wire.ParameterServer/Hello";
constexpr ChunkMethod kPull{"/monsoon.wire.ParameterServer/Pull", SegmentMethod::kPull};
constexpr ChunkMethod kPush{"/monsoon.wire.ParameterServer/Push", SegmentMethod::kPush};
constexpr ChunkMethod kExchange{"/monsoon.wire.ParameterServer/Exchange", SegmentMethod::kExchange};
constexpr char kStats[] = "/monsoon.wire.ParameterServer/Stats";
constexpr char kFinish[] = "/monsoon.wire.ParameterServer/Finish";
constexpr char kHeartbeat[] = "/monsoon.wire.ParameterServer/Heartbeat";

template <typename Header>
absl::Status ParseReply(const grpc::ByteBuffer& reply, Header* header) {
  return ReceivedFrame::Parse(reply, header).status();
}

// One unary call carrying `token`, with a deadline `timeout` away. gRPC completes it by then,
// or as good as: when gRPC has not called back `timeout` after its deadline (its threads are
// exhausted or wedged), the call is abandoned with DeadlineExceeded saying so. The buffers
// live on the heap, shared with gRPC's callback; the context is deleted here once the call
// has completed (never by the callback: gRPC destroys it while tearing the call down), and an
// abandoned call's context is left to gRPC, which may still complete it.
absl::Status BlockingCall(grpc::GenericStub& stub, const std::string& token,
                          const std::string& method, const grpc::ByteBuffer& request,
                          grpc::ByteBuffer* reply, absl::Duration timeout) {
  struct Completion {
    grpc::ByteBuffer request, reply;
    grpc::Status status;
    absl::Notification done;
  };
  auto completion = std::make_shared<Completion>();
  completion->request = request;  // shares the slices
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata(kTokenMetadataKey, token);
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &completion->request, &completion->reply,
                 [completion](grpc::Status s) {
                   completion->status = std::move(s);
                   completion->done.Notify();
                 });
  if (!completion->done.WaitForNotificationWithTimeout(2 * timeout)) {
    ctx->TryCancel();
    ctx.release();  // gRPC may still complete the call, which then needs its context
    return absl::DeadlineExceededError(absl::StrCat(
        "no completion from gRPC ", absl::FormatDuration(timeout),
        " past the call's deadline: its threads are exhausted or wedged (too many threads or "
        "processes on this machine?)"));
  }
  *reply = std::move(completion->reply);
  return FromGrpcStatus(completion->status);
}

// A Stats call's reply.
absl::StatusOr<ServerStats> ParseStats(const grpc::ByteBuffer& reply) {
  wire::StatsResponse r;
  MONSOON_RETURN_IF_ERROR(ParseReply(reply, &r));
  return FromWire(r);
}

// One chunk's weights from a reply that carries them (a pull, or a push with pull_after):
// the payload goes to the chunk's place in params, its version and clock into *result, its
// version into *versions (when not null).
absl::Status TakePulledChunk(const Chunk& c, const PayloadView& payload, uint64_t version,
                             uint64_t slowest_clock, absl::Span<float> params, PullResult* result,
                             ChunkVersions* versions) {
  MONSOON_RETURN_IF_ERROR(payload.CopyTo(params.subspan(c.offset, c.size)));
  result->TakeChunk(version, slowest_clock);
  if (versions != nullptr) (*versions)[c.id] = version;
  return absl::OkStatus();
}

// Which segment slots the calls of one operation hold, by chunk id (-1: none): set by a
// chunk's request (on any thread), read by its reply (the call window orders the two). A retry
// claims afresh: the slots of a call that got no answer are never released.
struct HeldSlots {
  explicit HeldSlots(int chunks) : request(chunks, -1), reply(chunks, -1) {}
  std::vector<int> request, reply;
};

// Claims a slot for chunk c's request from `slots` (null: the server shares none); -1 when
// none is free.
int ClaimRequestSlot(SegmentSlots* slots, const Chunk& c, HeldSlots* held) {
  held->request[c.id] = slots != nullptr ? slots->Claim() : -1;
  return held->request[c.id];
}

// Says in `use` that the request's `bytes` lie in slot `slot`.
void UseRequestSlot(const SegmentSlots& slots, int slot, size_t bytes, wire::SegmentUse* use) {
  use->set_id(slots.id());
  use->set_request(true);
  use->set_request_slot(static_cast<uint32_t>(slot));
  use->set_request_bytes(bytes);
}

// Asks for chunk c's reply in a slot of `slots` when one can be claimed.
void UseReplySlot(SegmentSlots* slots, const Chunk& c, wire::SegmentUse* use, HeldSlots* held) {
  held->reply[c.id] = slots != nullptr ? slots->Claim() : -1;
  if (held->reply[c.id] < 0) return;
  use->set_id(slots->id());
  use->set_reply(true);
  use->set_reply_slot(static_cast<uint32_t>(held->reply[c.id]));
}

// Where chunk c's reply payload lies: the reply slot this call holds, when the reply says it
// wrote there, else the frame.
PayloadView ReplyPayload(const SegmentSlots* slots, const Chunk& c, bool in_segment,
                         const ReceivedFrame& frame, const HeldSlots& held) {
  if (!in_segment || held.reply[c.id] < 0) return PayloadView(frame);
  return PayloadView(slots->At(held.reply[c.id]), c.size * sizeof(float));
}

// The slot chunk c's call may travel through (ChunkRequest::segment_slot): the first it holds,
// when it holds one for each payload it has (a request's when `request`, a reply's when
// `reply`); else -1.
int CallSlot(const Chunk& c, bool request, bool reply, const HeldSlots& held) {
  const int request_slot = held.request[c.id], reply_slot = held.reply[c.id];
  if ((request && request_slot < 0) || (reply && reply_slot < 0)) return -1;
  return request ? request_slot : reply_slot;
}

// Frees the slots chunk c's call held, once its reply has been read.
void ReleaseSlots(SegmentSlots* slots, const Chunk& c, HeldSlots* held) {
  for (int* slot : {&held->request[c.id], &held->reply[c.id]}) {
    if (*slot >= 0) slots->Release(*slot);
    *slot = -1;
  }
}

}  // namespace

GrpcPsClient::GrpcPsClient(std::vector<std::string> addresses, const ShardingPlan& plan,
                           ClientIdentity identity, const GrpcPsClientOptions& options)
    : addresses_(std::move(addresses)),
      plan_(plan),
      identity_(identity),
      options_(options),
      segments_(plan.num_servers()),
      windows_(plan.num_servers()),
      unreported_(plan.num_servers()) {
  const int max_message = static_cast<int>(plan_.max_chunk_size() * sizeof(float)) + (64 << 10);
  // Heartbeats (and other small calls) go through channel 0; chunk calls alternate over all.
  for (const std::string& address : addresses_) {
    stubs_.emplace_back();
    for (int k = 0; k < std::max(1, options_.channels_per_server); ++k) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(max_message);
      args.SetMaxSendMessageSize(max_message);
      // Keepalive: a dead server is noticed within ~15 s even with no call in flight.
      args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
      args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
      args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
      // Channels with different arguments never share a connection.
      args.SetInt("monsoon.channel_index", k);
      auto credentials = ChannelCredentialsFor(options_.secrets, &args);
      stubs_.back().push_back(std::make_unique<grpc::GenericStub>(
          grpc::CreateCustomChannel(address, credentials, args)));
    }
  }
}

GrpcPsClient::~GrpcPsClient() {
  {
    absl::MutexLock lock(&heartbeat_mu_);
    closing_ = true;
  }
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
}

void GrpcPsClient::HeartbeatLoop() {
  wire::HeartbeatRequest request;
  request.set_role(RoleToWire(identity_.role));
  request.set_index(identity_.index);
  request.set_incarnation(identity_.incarnation);
  const grpc::ByteBuffer frame = EncodeFrame(request);
  absl::MutexLock lock(&heartbeat_mu_);
  while (!heartbeat_mu_.AwaitWithTimeout(absl::Condition(&closing_), options_.heartbeat_interval)) {
    heartbeat_mu_.Unlock();
    // A failure shows in the training calls too (with the server named); nothing to do here.
    for (int j = 0; j < plan_.num_servers(); ++j) {
      grpc::ByteBuffer reply;
      Call(j, kHeartbeat, frame, &reply, options_.heartbeat_interval).IgnoreError();
    }
    heartbeat_mu_.Lock();
  }
}

absl::StatusOr<std::unique_ptr<GrpcPsClient>> GrpcPsClient::Connect(
    const std::vector<std::string>& servers, const ShardingPlan& plan, ClientIdentity identity,
    const GrpcPsClientOptions& options) {
  if (static_cast<int>(servers.size()) != plan.num_servers()) {
    return absl::InvalidArgumentError(absl::StrCat("plan has ", plan.num_servers(), " servers, ",
                                                   servers.size(), " addresses given"));
  }
  std::unique_ptr<GrpcPsClient> client(new GrpcPsClient(servers, plan, identity, options));
  for (int j = 0; j < plan.num_servers(); ++j) {
    wire::HelloRequest hello;
    hello.set_role(RoleToWire(identity.role));
    hello.set_index(identity.index);
    hello.set_plan_fingerprint(plan.fingerprint());
    hello.set_incarnation(identity.incarnation);
    if (options.local != LocalTransport::kGrpc) {
      hello.set_host_identity(LocalHostIdentity());
      hello.set_segment_slots(SegmentLayout::SlotsWanted(plan, j, options.max_in_flight));
    }
    grpc::ByteBuffer reply;
    MONSOON_RETURN_IF_ERROR(client->Call(j, kHello, EncodeFrame(hello), &reply));
    wire::HelloResponse response;
    MONSOON_RETURN_IF_ERROR(client->Annotate(j, "Hello", ParseReply(reply, &response)));
    if (response.server_index() != j) {
      return absl::FailedPreconditionError(
          absl::StrCat("address ", servers[j], " was published as server ", j,
                       " but answers as server ", response.server_index()));
    }
    if (j == 0 || response.resume_sequence() < client->resume_.sequence) {
      client->resume_ = {response.resume_sequence(), FromWire(response.resume_position())};
    }
    MONSOON_RETURN_IF_ERROR(client->AttachSegment(j, response.segment()));
  }
  if (options.heartbeat_interval > absl::ZeroDuration()) {
    client->heartbeat_thread_ = std::thread([c = client.get()] { c->HeartbeatLoop(); });
  }
  return client;
}

absl::Status GrpcPsClient::AttachSegment(int server, const wire::SegmentOffer& offer) {
  const bool required = options_.local == LocalTransport::kShm;
  if (offer.id() == 0) {
    if (!required) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "transport.local is shm but server ", server, " (", addresses_[server],
        ") shares no memory with this process: it is on another host (or in another network or "
        "PID namespace), or could not make a segment (see its log)"));
  }
  const SegmentLayout layout = SegmentLayout::For(plan_, offer.slots());
  absl::StatusOr<std::unique_ptr<SharedSegment>> memory =
      offer.bytes() == layout.bytes() && offer.slot_bytes() == layout.slot_bytes
          ? SharedSegment::Attach(offer.pid(), offer.fd(), offer.bytes())
          : absl::FailedPreconditionError(absl::StrCat(
                "the server's segment is ", offer.slots(), " slots of ", offer.slot_bytes(),
                " bytes, not of ", layout.slot_bytes));
  if (!memory.ok()) {
    if (!required) return absl::OkStatus();
    return Annotate(server, "shared segment", memory.status());
  }
  segments_[server] =
      std::make_unique<SegmentSlots>(*std::move(memory), offer.id(), layout, offer.pid());
  if (offer.window_bytes() == 0) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<ChunkWindow>> window =
      ChunkWindow::Attach(plan_, server, offer.pid(), offer.window_fd(), offer.window_bytes());
  if (!window.ok()) {
    return required ? Annotate(server, "chunk window", window.status()) : absl::OkStatus();
  }
  windows_[server] = *std::move(window);
  return absl::OkStatus();
}

std::vector<bool> GrpcPsClient::WindowedChunks() const {
  std::vector<bool> readable(plan_.num_servers(), false);
  for (int j = 0; j < plan_.num_servers(); ++j) {
    readable[j] = windows_[j] != nullptr && !segments_[j]->ServerGone();
  }
  std::vector<bool> windowed(plan_.num_chunks(), false);
  for (const Chunk& c : plan_.chunks()) windowed[c.id] = readable[c.server];
  return windowed;
}

std::vector<bool> GrpcPsClient::ReadWindows(absl::Span<float> params, const PullWait& wait,
                                            const std::vector<bool>& wanted,
                                            const std::vector<bool>& windowed, PullResult* result,
                                            ChunkVersions* versions) {
  std::vector<bool> done(plan_.num_chunks(), false);
  for (const Chunk& c : plan_.chunks()) done[c.id] = !wanted.empty() && !wanted[c.id];
  if (wait.min_clock > 0) return done;
  for (const Chunk& c : plan_.chunks()) {
    if (done[c.id] || !windowed[c.id]) continue;
    WindowedChunk seen;
    if (!ReadWindow(c, wait.ForChunk(c.id).min_version, params, &seen)) continue;
    done[c.id] = true;
    result->TakeChunk(seen.version, seen.slowest_clock);
    if (versions != nullptr) (*versions)[c.id] = seen.version;
    unreported_[c.server].reads.fetch_add(1, std::memory_order_relaxed);
    unreported_[c.server].bytes.fetch_add(c.size * sizeof(float), std::memory_order_relaxed);
  }
  return done;
}

bool GrpcPsClient::ReadWindow(const Chunk& c, uint64_t min_version, absl::Span<float> params,
                              WindowedChunk* seen) const {
  // A read that overlapped the server's write is tried once more.
  constexpr int kAttempts = 2;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (windows_[c.server]->Read(c.id, min_version, params.subspan(c.offset, c.size), seen)) {
      return true;
    }
  }
  return false;
}

void GrpcPsClient::TakeUnreportedReads(int server, wire::WindowReads* out) {
  out->set_reads(unreported_[server].reads.exchange(0, std::memory_order_relaxed));
  out->set_bytes(unreported_[server].bytes.exchange(0, std::memory_order_relaxed));
}

std::vector<int> GrpcPsClient::SharedMemoryServers() const {
  std::vector<int> servers;
  for (int j = 0; j < plan_.num_servers(); ++j) {
    if (segments_[j] != nullptr) servers.push_back(j);
  }
  return servers;
}

std::vector<int> GrpcPsClient::WindowServers() const {
  std::vector<int> servers;
  for (int j = 0; j < plan_.num_servers(); ++j) {
    if (windows_[j] != nullptr) servers.push_back(j);
  }
  return servers;
}

absl::Status GrpcPsClient::Annotate(int server, const std::string& what,
                                    const absl::Status& status) const {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("server ", server, " (", addresses_[server], ") ",
                                                  what, ": ", status.message()));
}

absl::Status GrpcPsClient::Call(int server, const std::string& method,
                                const grpc::ByteBuffer& request, grpc::ByteBuffer* reply,
                                absl::Duration timeout) {
  const absl::Status status =
      BlockingCall(*stubs_[server][0], options_.secrets.token, method, request, reply,
                   timeout > absl::ZeroDuration() ? timeout : options_.rpc_timeout);
  return Annotate(server, method.substr(method.rfind('/') + 1), status);
}

absl::Status GrpcPsClient::ForEachChunk(const ChunkMethod& method,
                                        const ChunkCallWindow::MakeRequest& request,
                                        const ChunkCallWindow::OnReply& on_reply,
                                        const std::vector<bool>& done) {
  ChunkCallWindow::Options window;
  window.token = options_.secrets.token;
  window.max_in_flight = options_.max_in_flight;
  window.max_attempts = options_.max_attempts;
  window.rpc_timeout = options_.rpc_timeout;
  return ChunkCallWindow(plan_, stubs_, segments_, window, method, request, on_reply,
                         [this](int server, const std::string& what, const absl::Status& status) {
                           return Annotate(server, what, status);
                         })
      .Run(done);
}

absl::StatusOr<PullResult> GrpcPsClient::PullAll(absl::Span<float> params, const PullWait& wait,
                                                 ChunkVersions* versions) {
  if (params.size() != plan_.num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pull into ", params.size(), " floats; the model has ", plan_.num_params()));
  }
  if (versions != nullptr) versions->assign(plan_.num_chunks(), 0);
  MONSOON_ASSIGN_OR_RETURN(PullResult result, PullChunks(params, wait, {}, versions));
  bytes_received_ += params.size() * sizeof(float);
  return result;
}

absl::StatusOr<PullResult> GrpcPsClient::PullChunks(absl::Span<float> params, const PullWait& wait,
                                                    const std::vector<bool>& wanted,
                                                    ChunkVersions* versions) {
  PullResult result = PullResult::BeforeChunks();
  const std::vector<bool> windowed = WindowedChunks();
  std::vector<bool> done = ReadWindows(params, wait, wanted, windowed, &result, versions);
  // The rest are called for. A windowed chunk's call only waits for its condition, then the
  // window is read; one whose read overlapped a write again is called once more, for values.
  for (const bool from_window : {true, false}) {
    if (std::find(done.begin(), done.end(), false) == done.end()) break;
    MONSOON_RETURN_IF_ERROR(CallPulls(params, wait, from_window ? windowed : std::vector<bool>(),
                                      &done, &result, versions));
  }
  return result;
}

absl::Status GrpcPsClient::CallPulls(absl::Span<float> params, const PullWait& wait,
                                     const std::vector<bool>& from_window, std::vector<bool>* done,
                                     PullResult* result, ChunkVersions* versions) {
  const std::vector<bool> skip = *done;
  HeldSlots held(plan_.num_chunks());
  return ForEachChunk(
      kPull,
      [&](const Chunk& c) {
        wire::PullRequest request;
        request.set_chunk_id(c.id);
        UseReplySlot(SlotsOf(c), c, request.mutable_segment(), &held);
        const PullCondition condition = wait.ForChunk(c.id);
        request.set_min_version(condition.min_version);
        request.set_min_clock(condition.min_clock);
        request.set_role(RoleToWire(identity_.role));
        request.set_index(identity_.index);
        request.set_from_window(!from_window.empty() && from_window[c.id]);
        return ChunkRequest{EncodeFrame(request), CallSlot(c, false, true, held)};
      },
      [&](const Chunk& c, const grpc::ByteBuffer& reply) -> absl::Status {
        wire::PullResponse header;
        MONSOON_ASSIGN_OR_RETURN(ReceivedFrame frame, ReceivedFrame::Parse(reply, &header));
        if (header.chunk_id() != c.id) {
          return absl::InternalError(absl::StrCat("reply for chunk ", header.chunk_id()));
        }
        absl::Status taken;
        if (!header.payload_in_window()) {
          taken = TakePulledChunk(
              c, ReplyPayload(SlotsOf(c), c, header.payload_in_segment(), frame, held),
              header.version(), header.slowest_clock(), params, result, versions);
          (*done)[c.id] = taken.ok();
        } else if (windows_[c.server] == nullptr) {
          taken = absl::InternalError("a pull's reply points to a chunk window this client lacks");
        } else if (WindowedChunk seen; ReadWindow(c, header.version(), params, &seen)) {
          result->TakeChunk(seen.version, header.slowest_clock());
          if (versions != nullptr) (*versions)[c.id] = seen.version;
          (*done)[c.id] = true;
        }
        ReleaseSlots(SlotsOf(c), c, &held);
        return taken;
      },
      skip);
}

// The header a push and an exchange share: which chunk, from whom, computed on which version,
// and the push's origin (every chunk of one push gets the same).
void FillUpdateHeader(const Chunk& c, const ClientIdentity& identity, uint64_t base_version,
                      const PushOrigin& origin, wire::ChunkUpdateHeader* header) {
  header->set_chunk_id(c.id);
  header->set_worker_index(identity.index);
  header->set_num_floats(c.size);
  header->set_base_version(base_version);
  header->set_epoch(origin.epoch);
  header->set_incarnation(identity.incarnation);
  header->set_sequence(origin.sequence);
  ToWire(origin.position, header->mutable_position());
}

absl::StatusOr<PushSummary> GrpcPsClient::PushAll(FiniteGradient gradient,
                                                  const ChunkVersions& base_versions,
                                                  const PushOrigin& origin) {
  return PushChunks(gradient.values(), base_versions, origin, nullptr);
}

absl::StatusOr<PushSummary> GrpcPsClient::PushPullAll(FiniteGradient gradient,
                                                      const ChunkVersions& base_versions,
                                                      const PushOrigin& origin,
                                                      PullAfterPush* pull) {
  if (pull->params.size() != plan_.num_params() || pull->versions == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("pull after a push into ", pull->params.size(),
                                                   " floats; the model has ", plan_.num_params()));
  }
  return PushChunks(gradient.values(), base_versions, origin, pull);
}

absl::StatusOr<PushSummary> GrpcPsClient::PushChunks(absl::Span<const float> gradient,
                                                     const ChunkVersions& base_versions,
                                                     const PushOrigin& origin,
                                                     PullAfterPush* pull) {
  if (gradient.size() != plan_.num_params() ||
      base_versions.size() != static_cast<size_t>(plan_.num_chunks())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push of ", gradient.size(), " floats with ", base_versions.size(),
        " chunk versions; the model has ", plan_.num_params(), " in ", plan_.num_chunks()));
  }
  PushSummary summary;
  std::atomic<uint64_t> sent{0};  // payload bytes, after encoding
  // Written per chunk by the replies; base_versions stays valid even if it is *pull->versions.
  ChunkVersions pulled_versions(pull != nullptr ? plan_.num_chunks() : 0);
  // With `pull`, a chunk whose server has a window is read from it after its push, at the
  // version the push made at least; the others' replies bring their weights.
  const std::vector<bool> windowed =
      pull != nullptr ? WindowedChunks() : std::vector<bool>(plan_.num_chunks(), false);
  PullWait after_push{ChunkVersions(plan_.num_chunks(), 0), 0};
  if (pull != nullptr) pull->result = PullResult::BeforeChunks();
  HeldSlots held(plan_.num_chunks());
  MONSOON_RETURN_IF_ERROR(ForEachChunk(
      kPush,
      [&](const Chunk& c) {
        const bool weights_in_reply = pull != nullptr && !windowed[c.id];
        wire::PushRequest request;
        FillUpdateHeader(c, identity_, base_versions[c.id], origin, request.mutable_update());
        TakeUnreportedReads(c.server, request.mutable_update()->mutable_window_reads());
        request.set_pull_after(pull != nullptr);
        request.set_pull_from_window(windowed[c.id]);
        if (weights_in_reply) UseReplySlot(SlotsOf(c), c, request.mutable_segment(), &held);
        grpc::Slice payload =
            EncodeGradient(c, gradient.subspan(c.offset, c.size),
                           ClaimRequestSlot(SlotsOf(c), c, &held), &request);
        const bool in_segment = request.segment().request();
        sent += in_segment ? request.segment().request_bytes() : payload.size();
        return ChunkRequest{EncodeFrame(request, std::move(payload)),
                            in_segment ? CallSlot(c, true, weights_in_reply, held) : -1};
      },
      [&](const Chunk& c, const grpc::ByteBuffer& reply) -> absl::Status {
        wire::PushResponse header;
        MONSOON_ASSIGN_OR_RETURN(ReceivedFrame frame, ReceivedFrame::Parse(reply, &header));
        summary.AddChunk(header.staleness(), header.applied(), header.duplicate(),
                         plan_.num_chunks());
        after_push.min_versions[c.id] = header.version();
        absl::Status taken;
        if (pull != nullptr && !windowed[c.id]) {
          taken = TakePulledChunk(
              c, ReplyPayload(SlotsOf(c), c, header.payload_in_segment(), frame, held),
              header.pulled_version(), header.slowest_clock(), pull->params, &pull->result,
              &pulled_versions);
        }
        ReleaseSlots(SlotsOf(c), c, &held);
        return taken;
      }));
  bytes_sent_ += sent.load();
  if (pull == nullptr) return summary;
  if (std::find(windowed.begin(), windowed.end(), true) != windowed.end()) {
    MONSOON_ASSIGN_OR_RETURN(const PullResult read,
                             PullChunks(pull->params, after_push, windowed, &pulled_versions));
    pull->result.TakeChunk(read.min_version, read.slowest_clock);
  }
  *pull->versions = std::move(pulled_versions);
  bytes_received_ += pull->params.size() * sizeof(float);
  return summary;
}

absl::StatusOr<PushSummary> GrpcPsClient::ExchangeAll(absl::Span<const float> weights,
                                                      absl::Span<float> difference,
                                                      ChunkVersions* versions,
                                                      const PushOrigin& origin) {
  if (weights.size() != plan_.num_params() || difference.size() != plan_.num_params() ||
      versions->size() != static_cast<size_t>(plan_.num_chunks())) {
    return absl::InvalidArgumentError(absl::StrCat("exchange of ", weights.size(), " floats into ",
                                                   difference.size(), " with ", versions->size(),
                                                   " chunk versions; the model has ",
                                                   plan_.num_params(), " in ", plan_.num_chunks()));
  }
  MONSOON_RETURN_IF_ERROR(CheckFinite("the weights", weights));
  PushSummary summary;
  HeldSlots held(plan_.num_chunks());
  MONSOON_RETURN_IF_ERROR(ForEachChunk(
      kExchange,
      [&](const Chunk& c) {
        wire::ExchangeRequest request;
        FillUpdateHeader(c, identity_, (*versions)[c.id], origin, request.mutable_update());
        TakeUnreportedReads(c.server, request.mutable_update()->mutable_window_reads());
        UseReplySlot(SlotsOf(c), c, request.mutable_segment(), &held);
        const absl::Span<const float> values = weights.subspan(c.offset, c.size);
        const int slot = ClaimRequestSlot(SlotsOf(c), c, &held);
        if (slot < 0) return ChunkRequest{EncodeFrame(request, BorrowFloats(values))};
        std::memcpy(SlotsOf(c)->At(slot), values.data(), values.size() * sizeof(float));
        UseRequestSlot(*SlotsOf(c), slot, values.size() * sizeof(float),
                       request.mutable_segment());
        return ChunkRequest{EncodeFrame(request), CallSlot(c, true, true, held)};
      },
      [&](const Chunk& c, const grpc::ByteBuffer& reply) -> absl::Status {
        wire::ExchangeResponse header;
        MONSOON_ASSIGN_OR_RETURN(ReceivedFrame frame, ReceivedFrame::Parse(reply, &header));
        if (header.chunk_id() != c.id) {
          return absl::InternalError(absl::StrCat("reply for chunk ", header.chunk_id()));
        }
        const absl::Status copied = ReplyPayload(SlotsOf(c), c, header.payload_in_segment(),
                                                 frame, held)
                                        .CopyTo(difference.subspan(c.offset, c.size));
        ReleaseSlots(SlotsOf(c), c, &held);
        MONSOON_RETURN_IF_ERROR(copied);
        summary.AddChunk(header.staleness(), true, header.duplicate(), plan_.num_chunks());
        (*versions)[c.id] = header.version();
        return absl::OkStatus();
      }));
  bytes_sent_ += weights.size() * sizeof(float);
  bytes_received_ += difference.size() * sizeof(float);
  return summary;
}

grpc::Slice GrpcPsClient::EncodeGradient(const Chunk& c, absl::Span<const float> chunk, int slot,
                                         wire::PushRequest* request) const {
  size_t nnz = 0;
  wire::Encoding encoding = wire::ENCODING_F32;  // model state travels exact
  if (!c.state && options_.compression == Compression::kFp16) {
    encoding = wire::ENCODING_F16;
  } else if (!c.state && options_.compression == Compression::kTopk) {
    nnz = chunk.size() - std::count(chunk.begin(), chunk.end(), 0.0f);
    if (nnz * 2 < chunk.size()) encoding = wire::ENCODING_SPARSE_F32;  // 8-byte pairs win
  }
  request->set_encoding(encoding);
  if (encoding == wire::ENCODING_SPARSE_F32) request->set_nnz(nnz);
  const size_t bytes = encoding == wire::ENCODING_F32   ? chunk.size() * sizeof(float)
                       : encoding == wire::ENCODING_F16 ? chunk.size() * sizeof(uint16_t)
                                                        : nnz * 2 * sizeof(uint32_t);
  grpc::Slice payload;
  uint8_t* out = nullptr;
  if (slot >= 0) {
    UseRequestSlot(*SlotsOf(c), slot, bytes, request->mutable_segment());
    out = SlotsOf(c)->At(slot);
  } else if (encoding == wire::ENCODING_F32) {
    return BorrowFloats(chunk);  // without a copy
  } else {
    payload = grpc::Slice(bytes);
    out = const_cast<uint8_t*>(payload.begin());
  }
  if (encoding == wire::ENCODING_F32) {
    std::memcpy(out, chunk.data(), bytes);
  } else if (encoding == wire::ENCODING_F16) {
    FloatsToHalves(chunk, reinterpret_cast<uint16_t*>(out));
  } else {
    uint32_t* pairs = reinterpret_cast<uint32_t*>(out);
    for (uint32_t i = 0; i < chunk.size(); ++i) {
      if (chunk[i] == 0.0f) continue;
      *pairs++ = i;
      std::memcpy(pairs++, &chunk[i], sizeof(float));
    }
  }
  return payload;
}

absl::Status GrpcPsClient::Finish() {
  wire::FinishRequest request;
  request.set_role(RoleToWire(identity_.role));
  request.set_index(identity_.index);
  for (int j = 0; j < plan_.num_servers(); ++j) {
    TakeUnreportedReads(j, request.mutable_window_reads());
    grpc::ByteBuffer reply;
    MONSOON_RETURN_IF_ERROR(Call(j, kFinish, EncodeFrame(request), &reply));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ServerStats>> GrpcPsClient::AllStats() {
  std::vector<ServerStats> all;
  for (int j = 0; j < plan_.num_servers(); ++j) {
    grpc::ByteBuffer reply;
    MONSOON_RETURN_IF_ERROR(Call(j, kStats, EncodeFrame(wire::StatsRequest()), &reply));
    absl::StatusOr<ServerStats> stats = ParseStats(reply);
    MONSOON_RETURN_IF_ERROR(Annotate(j, "Stats", stats.status()));
    all.push_back(*std::move(stats));
  }
  return all;
}

TransferCounters GrpcPsClient::counters() const {
  return {bytes_sent_.load(), bytes_received_.load()};
}

absl::StatusOr<ServerStats> QueryServerStats(const std::string& address, const JobSecrets& secrets,
                                             absl::Duration timeout) {
  grpc::ChannelArguments args;
  auto credentials = ChannelCredentialsFor(secrets, &args);
  grpc::GenericStub stub(grpc::CreateCustomChannel(address, credentials, args));
  grpc::ByteBuffer reply;
  MONSOON_RETURN_IF_ERROR(BlockingCall(stub, secrets.token, kStats,
                                       EncodeFrame(wire::StatsRequest()), &reply, timeout));
  return ParseStats(reply);
}

}  // namespace monsoon
