#include "worker/chunk_call_window.h"

#include <glog/logging.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/frame.h"
#include "proto/grpc_status.h"
#include "proto/segment_call.h"

namespace monsoon {
namespace {

// "Pull" for "/monsoon.wire.ParameterServer/Pull".
std::string ShortName(absl::string_view method) {
  return std::string(method.substr(method.rfind('/') + 1));
}

}  // namespace

ChunkCallWindow::ChunkCallWindow(
    const ShardingPlan& plan,
    const std::vector<std::vector<std::unique_ptr<grpc::GenericStub>>>& stubs,
    const std::vector<std::unique_ptr<SegmentSlots>>& segments, const Options& options,
    ChunkMethod method, MakeRequest make_request, OnReply on_reply, Annotate annotate)
    : plan_(plan),
      stubs_(stubs),
      segments_(segments),
      options_(options),
      method_(method),
      what_(ShortName(method.grpc)),
      make_request_(std::move(make_request)),
      on_reply_(std::move(on_reply)),
      annotate_(std::move(annotate)) {}

ChunkCallWindow::InFlight* ChunkCallWindow::NewCall(const Chunk* chunk, int server, int attempt) {
  calls_.push_back(std::make_unique<InFlight>());
  InFlight* call = calls_.back().get();
  call->chunk = chunk;
  call->server = server;
  call->attempt = attempt;
  ++outstanding_;
  return call;
}

ChunkCallWindow::InFlight* ChunkCallWindow::ClaimNext(int server) {
  if (!first_error_.ok() || pending_[server].empty()) return nullptr;
  const Chunk* chunk = pending_[server].front();
  pending_[server].pop_front();
  return NewCall(chunk, server, 1);
}

void ChunkCallWindow::Launch(InFlight* call) {
  ChunkRequest request = make_request_(*call->chunk);
  SegmentSlots* segment = segments_[call->server].get();
  if (request.segment_slot >= 0 && segment != nullptr) {
    LaunchThroughSegment(call, segment, request.segment_slot, std::move(request.frame));
    return;
  }
  call->request = std::move(request.frame);
  call->ctx.AddMetadata(kTokenMetadataKey, options_.token);
  call->ctx.set_deadline(absl::ToChronoTime(absl::Now() + options_.rpc_timeout));
  const auto& pool = stubs_[call->server];
  const size_t channel = (call->chunk->id / plan_.num_servers()) % pool.size();
  pool[channel]->UnaryCall(&call->ctx, method_.grpc, grpc::StubOptions(), &call->request,
                           &call->reply,
                           [this, call](grpc::Status s) { Done(call, std::move(s)); });
}

void ChunkCallWindow::LaunchThroughSegment(InFlight* call, SegmentSlots* segment, int slot,
                                           grpc::ByteBuffer frame) {
  SegmentRequest request{method_.segment, std::move(frame), absl::Now() + options_.rpc_timeout};
  segment->Call(slot, request, [this, call](absl::StatusOr<grpc::ByteBuffer> answer) {
    if (answer.ok()) call->reply = *std::move(answer);
    Done(call, ToGrpcStatus(answer.status()));
  });
}

void ChunkCallWindow::Done(InFlight* call, grpc::Status status) {
  InFlight* next;
  {
    absl::MutexLock lock(&mu_);
    call->status = std::move(status);
    completed_.push_back(call);
    next = call->status.ok() ? ClaimNext(call->server) : nullptr;
    --outstanding_;
  }
  // The window may be gone now unless `next` is in flight.
  if (next != nullptr) Launch(next);
}

void ChunkCallWindow::Handle(InFlight* call) {
  const grpc::StatusCode code = call->status.error_code();
  const bool transient =
      code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::RESOURCE_EXHAUSTED;
  if (transient && call->attempt < options_.max_attempts && first_error_.ok()) {
    // Again, on a fresh call (a context serves one call); its completion keeps the server's
    // window going.
    InFlight* retry = NewCall(call->chunk, call->server, call->attempt + 1);
    mu_.Unlock();
    absl::SleepFor(absl::Milliseconds(100) * (1 << (call->attempt - 1)));
    Launch(retry);
    mu_.Lock();
    return;
  }
  mu_.Unlock();
  absl::Status result = FromGrpcStatus(call->status);
  if (result.ok()) result = on_reply_(*call->chunk, call->reply);
  mu_.Lock();
  if (!result.ok() && first_error_.ok()) {
    first_error_ = annotate_(call->server, absl::StrCat(what_, " chunk ", call->chunk->id), result);
  }
}

absl::Status ChunkCallWindow::Run(const std::vector<bool>& done) {
  std::vector<InFlight*> first_calls;
  {
    absl::MutexLock lock(&mu_);
    pending_.resize(plan_.num_servers());
    for (const Chunk& c : plan_.chunks()) {
      if (done.empty() || !done[c.id]) pending_[c.server].push_back(&c);
    }
    for (int server = 0; server < plan_.num_servers(); ++server) {
      for (int i = 0; i < options_.max_in_flight; ++i) {
        if (InFlight* call = ClaimNext(server)) first_calls.push_back(call);
      }
    }
  }
  for (InFlight* call : first_calls) Launch(call);
  absl::MutexLock lock(&mu_);
  while (true) {
    // Every call completes by its deadline. gRPC owns the calls and calls back into this
    // window, so if it stops completing them (its threads exhausted or wedged), the process
    // cannot go on: it ends, saying why, rather than hang.
    if (!mu_.AwaitWithTimeout(absl::Condition(this, &ChunkCallWindow::Ready),
                              2 * options_.rpc_timeout)) {
      LOG(FATAL) << what_ << ": no completion from gRPC for "
                 << absl::FormatDuration(2 * options_.rpc_timeout) << " with " << outstanding_
                 << " chunk call(s) past their " << absl::FormatDuration(options_.rpc_timeout)
                 << " deadline: gRPC's threads are exhausted or wedged";
    }
    if (completed_.empty()) break;  // nothing in flight and nothing left to handle
    InFlight* call = completed_.front();
    completed_.pop_front();
    Handle(call);
  }
  return first_error_;
}

}  // namespace monsoon
