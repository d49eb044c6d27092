// Real gRPC between a GrpcPsClient and GrpcParameterServers in this process, on port 0, with
// the payloads through the shared segments (transport.local shm), or with
// MONSOON_TEST_LOCAL=grpc (the BUILD's second target) through gRPC: every case runs on both.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "core/compression.h"
#include "core/finite.h"
#include "core/process/chunk_window.h"
#include "core/process/futex.h"
#include "core/process/segment_layout.h"
#include "proto/frame.h"
#include "proto/monsoon.pb.h"
#include "proto/segment_call.h"
#include "server/grpc_parameter_server.h"
#include "tests/manual_clock.h"
#include "tests/test_util.h"
#include "worker/grpc_ps_client.h"
#include "worker/push_pipeline.h"
#include "worker/segment_slots.h"

namespace monsoon {
namespace {

// The payload path every client of this run takes (see the top).
LocalTransport TestPath() {
  const char* path = std::getenv("MONSOON_TEST_LOCAL");
  return path != nullptr && std::string(path) == "grpc" ? LocalTransport::kGrpc
                                                        : LocalTransport::kShm;
}

// S servers over a linear-regression "model" with `params` parameters, SGD at rate 1 so a
// push of g moves the weights by exactly -g.
struct Cluster {
  Cluster(size_t params, int servers, size_t chunk_floats,
          Algorithm algorithm = Algorithm::kDownpour, const StalenessConfig& staleness = {}) {
    spec.type = ModelType::kLinearRegression;
    spec.input_dim = static_cast<int>(params - 1);
    spec.output_dim = 1;
    spec.loss = LossType::kMeanSquaredError;
    plan = *ShardingPlan::Create(params, servers, chunk_floats);
    ServerRules rules;
    rules.algorithm = algorithm;
    rules.staleness = staleness;
    rules.optimizer.learning_rate = 1.0f;
    rules.easgd.alpha = 0.5;
    for (int j = 0; j < servers; ++j) {
      logic.push_back(
          std::make_unique<ParameterServer>(j, plan, ModelInitialValues(spec, 1), rules, 2, false));
      auto started = GrpcParameterServer::Start(logic.back().get(), "127.0.0.1",
                                                JobSecrets::TokenOnly("secret"),
                                                ServerLimits::For(plan, 2, 16));
      REQUIRE(started.ok());
      addresses.push_back((*started)->address());
      grpc_servers.push_back(std::move(*started));
    }
  }
  absl::StatusOr<std::unique_ptr<GrpcPsClient>> Connect(
      const std::string& token, int in_flight = 4, int worker = 0,
      Compression compression = Compression::kNone) {
    GrpcPsClientOptions options;
    options.compression = compression;
    options.secrets.token = token;
    options.max_in_flight = in_flight;
    options.rpc_timeout = absl::Seconds(20);
    options.local = TestPath();
    return GrpcPsClient::Connect(addresses, plan, {RoleKind::kWorker, worker}, options);
  }
  ModelSpec spec;
  ShardingPlan plan;
  std::vector<std::unique_ptr<ParameterServer>> logic;
  std::vector<std::unique_ptr<GrpcParameterServer>> grpc_servers;
  std::vector<std::string> addresses;
};

// The origin of a worker's k-th push (progress `epoch`).
PushOrigin Nth(uint64_t k, double epoch = 0) {
  PushOrigin origin;
  origin.sequence = k;
  origin.epoch = epoch;
  return origin;
}

// One RPC of `method` with a hand-made body (with the job token), bypassing GrpcPsClient;
// the reply into *reply when given.
grpc::Status RawCall(const std::string& address, const std::string& method,
                     const grpc::ByteBuffer& request, grpc::ByteBuffer* reply_out = nullptr) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadataKey, "secret");
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::ByteBuffer reply;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&ctx, "/monsoon.wire.ParameterServer/" + method, grpc::StubOptions(), &request,
                 &reply, [&](grpc::Status s) {
                   status = s;
                   done.Notify();
                 });
  done.WaitForNotification();
  if (reply_out != nullptr) *reply_out = reply;
  return status;
}

TEST_CASE("gRPC: push then pull round-trips every chunk across servers", "[grpc][integration]") {
  Cluster cluster(10001, 3, 1000);  // 11 chunks over 3 servers
  auto client = cluster.Connect("secret", 2);
  REQUIRE(client.ok());
  std::vector<float> params(10001);
  ChunkVersions versions;
  auto v0 = (*client)->PullAll(absl::MakeSpan(params), {}, &versions);
  REQUIRE(v0.ok());
  CHECK(v0->min_version == 0);
  CHECK(versions.size() == 11);
  CHECK(std::all_of(params.begin(), params.end(), [](float x) { return x == 0.0f; }));
  std::vector<float> grad(10001);
  std::iota(grad.begin(), grad.end(), 0.0f);
  REQUIRE((*client)->PushAll(Finite(grad), versions, Nth(1, 0.5)).ok());
  auto v1 = (*client)->PullAll(absl::MakeSpan(params), {}, &versions);
  REQUIRE(v1.ok());
  CHECK(v1->min_version == 1);
  CHECK(std::all_of(versions.begin(), versions.end(), [](uint64_t v) { return v == 1; }));
  for (size_t i = 0; i < params.size(); ++i) REQUIRE(params[i] == -static_cast<float>(i));
  CHECK((*client)->counters().bytes_sent == 10001 * 4);
  CHECK((*client)->SharedMemoryServers() ==
        (TestPath() == LocalTransport::kShm ? std::vector<int>{0, 1, 2} : std::vector<int>{}));
  CHECK((*client)->WindowServers() == (*client)->SharedMemoryServers());
  auto stats = (*client)->AllStats();
  REQUIRE(stats.ok());
  CHECK(stats->size() == 3);
  // Through shared memory, pulls read the servers' chunk windows without a call, and a server
  // learns of them with the client's next push to it (the first pull's), or its Finish.
  const size_t chunks = cluster.plan.ChunksOf(0).size();
  CHECK((*stats)[0].pulls_served == (TestPath() == LocalTransport::kShm ? 1 : 2) * chunks);
  REQUIRE((*client)->Finish().ok());
  stats = (*client)->AllStats();
  REQUIRE(stats.ok());
  CHECK((*stats)[0].pulls_served == 2 * chunks);
  CHECK((*stats)[0].bytes_sent == 2 * cluster.plan.FloatsOf(0) * sizeof(float));
}

TEST_CASE("gRPC: a push brings back every chunk's weights right after it (PushPullAll)",
          "[grpc][integration]") {
  Cluster cluster(10001, 3, 1000);
  auto client = cluster.Connect("secret", 2);
  REQUIRE(client.ok());
  std::vector<float> grad(10001, 0.5f), params(10001, 7.0f);
  ChunkVersions versions(cluster.plan.num_chunks(), 0);
  PullAfterPush pull{absl::MakeSpan(params), &versions, {}};
  auto first = (*client)->PushPullAll(Finite(grad), versions, Nth(1), &pull);
  REQUIRE(first.ok());
  CHECK(first->chunks_dropped == 0);
  CHECK(pull.result.min_version == 1);
  CHECK(std::all_of(versions.begin(), versions.end(), [](uint64_t v) { return v == 1; }));
  CHECK(std::all_of(params.begin(), params.end(), [](float x) { return x == -0.5f; }));
  // A repeat is a duplicate: nothing applied, the weights come back all the same.
  std::fill(params.begin(), params.end(), 7.0f);
  auto again =
      (*client)->PushPullAll(Finite(grad), ChunkVersions(versions.size(), 0), Nth(1), &pull);
  REQUIRE(again.ok());
  CHECK(again->chunks_duplicate == cluster.plan.num_chunks());
  CHECK(std::all_of(params.begin(), params.end(), [](float x) { return x == -0.5f; }));
  std::vector<float> pulled(10001);
  REQUIRE((*client)->PullAll(absl::MakeSpan(pulled), {}, nullptr).ok());
  CHECK(pulled == params);
  CHECK((*client)->counters().bytes_received == 3 * 10001 * 4);
}

TEST_CASE("gRPC: a pull after a push is refused where pulls wait, before anything is applied",
          "[grpc][integration]") {
  Cluster cluster(100, 1, 100, Algorithm::kSync);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
  std::vector<float> params(100);
  ChunkVersions versions(1, 0);
  PullAfterPush pull{absl::MakeSpan(params), &versions, {}};
  const auto refused =
      (*client)->PushPullAll(Finite(std::vector<float>(100, 1.0f)), versions, Nth(1), &pull);
  CHECK(absl::IsFailedPrecondition(refused.status()));
  CHECK(refused.status().message().find("only Downpour") != std::string::npos);
  CHECK(cluster.logic[0]->Stats().pushes_applied == 0);
  CHECK(cluster.logic[0]->Ledger().front().applied == 0);
}

TEST_CASE("gRPC: when gRPC's threads are all blocked, a connect fails saying so, not hangs",
          "[grpc][integration][reliability]") {
  Cluster cluster(64, 1, 16);
  // Calls whose completions block every thread gRPC runs callbacks on.
  auto channel = grpc::CreateChannel(cluster.addresses[0], grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  absl::Notification release;
  constexpr int kBlockers = 256;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<grpc::ByteBuffer> requests(kBlockers), replies(kBlockers);
  std::atomic<int> blocked{0}, finished{0};
  for (int i = 0; i < kBlockers; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    requests[i] = EncodeFrame(wire::StatsRequest());
    stub.UnaryCall(contexts.back().get(), "/monsoon.wire.ParameterServer/Stats",
                   grpc::StubOptions(), &requests[i], &replies[i], [&](grpc::Status) {
                     ++blocked;
                     release.WaitForNotification();
                     ++finished;
                   });
  }
  while (blocked.load() == 0) absl::SleepFor(absl::Milliseconds(10));
  GrpcPsClientOptions options;
  options.secrets.token = "secret";
  options.rpc_timeout = absl::Seconds(1);
  options.local = TestPath();
  const absl::Time start = absl::Now();
  auto client =
      GrpcPsClient::Connect(cluster.addresses, cluster.plan, {RoleKind::kWorker, 0}, options);
  const absl::Duration took = absl::Now() - start;
  release.Notify();
  while (finished.load() < kBlockers) absl::SleepFor(absl::Milliseconds(10));
  INFO("blocked callbacks: " << blocked.load() << ", connect took " << took);
  REQUIRE(absl::IsDeadlineExceeded(client.status()));
  CHECK(std::string(client.status().message()).find("server 0 (") == 0);
  CHECK(std::string(client.status().message())
            .find("Hello: no completion from gRPC 1s past the "
                  "call's deadline") != std::string::npos);
  CHECK(took < absl::Seconds(5));
}

TEST_CASE("gRPC: chunks above gRPC's 4 MiB default message size travel", "[grpc][integration]") {
  const size_t n = 6 * 1024 * 1024;  // 24 MiB in 8 MiB chunks
  Cluster cluster(n, 1, 2 * 1024 * 1024);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
  std::vector<float> grad(n, 0.25f), params(n);
  REQUIRE(
      (*client)->PushAll(Finite(grad), ChunkVersions(cluster.plan.num_chunks(), 0), Nth(1)).ok());
  REQUIRE((*client)->PullAll(absl::MakeSpan(params), {}, nullptr).ok());
  CHECK(params.front() == -0.25f);
  CHECK(params.back() == -0.25f);
}

TEST_CASE("gRPC: a server of 30,000 of the smallest chunks (4 KiB) answers Hello",
          "[grpc][integration]") {
  // The messages are sized for one chunk plus 64 KiB; nothing in a Hello may grow with the
  // number of chunks (its reply once listed their ids: ~73 KB here).
  const size_t chunk_floats = 1024;
  Cluster cluster(30000 * chunk_floats, 1, chunk_floats);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
}

TEST_CASE("gRPC: a wrong or missing token is refused and changes nothing", "[grpc][security]") {
  Cluster cluster(100, 1, 100);
  auto wrong = cluster.Connect("not-the-secret");
  REQUIRE(absl::IsUnauthenticated(wrong.status()));
  CHECK(std::string(wrong.status().message()).find("wrong job token") != std::string::npos);
  auto missing = cluster.Connect("");
  CHECK(absl::IsUnauthenticated(missing.status()));
  CHECK(cluster.logic[0]->Stats().pulls_served == 0);
}

TEST_CASE("gRPC: a worker's NaN gradient is refused whole before any chunk is sent",
          "[grpc][validation]") {
  Cluster cluster(100, 2, 50);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
  // The worker's path: the pass that wrote the accumulator found the NaN (Written), or the
  // pipeline scans for it when nothing vouched.
  for (const bool vouched : {true, false}) {
    PushPipeline pipeline(client->get(), 100, /*overlap=*/vouched, nullptr);
    std::fill(pipeline.accumulator().begin(), pipeline.accumulator().end(), 1.0f);
    pipeline.accumulator()[70] = std::numeric_limits<float>::quiet_NaN();  // chunk 1, server 1
    if (vouched) pipeline.Written(70);
    pipeline.Start(ChunkVersions(2, 0), Nth(1), nullptr, nullptr);
    const absl::Status pushed = pipeline.Wait().status();
    REQUIRE(absl::IsInvalidArgument(pushed));
    CHECK(std::string(pushed.message()) ==
          "the gradient is not finite at element 70 (nan); nothing was pushed");
    CHECK(IsNonFiniteRefusal(pushed));
    for (const auto& logic : cluster.logic) CHECK(logic->Stats().pushes_applied == 0);
  }
  // The sequence number was not consumed: the next push is not a gap.
  CHECK(
      (*client)->PushAll(Finite(std::vector<float>(100, 1.0f)), ChunkVersions(2, 0), Nth(1)).ok());
  for (const auto& logic : cluster.logic) CHECK(logic->Stats().pushes_applied == 1);
}

TEST_CASE("gRPC: an oversize or malformed request is refused by the server", "[grpc][validation]") {
  Cluster cluster(1000, 1, 1000);
  auto call = [&](const grpc::ByteBuffer& request) {
    return RawCall(cluster.addresses[0], "Push", request);
  };
  wire::PushRequest header;
  header.mutable_update()->set_chunk_id(0);
  header.mutable_update()->set_sequence(1);
  header.mutable_update()->set_num_floats(1 << 20);
  std::vector<float> huge(1 << 20, 0.0f);  // 4 MiB, far above this server's 1000-float chunks
  CHECK(call(EncodeFrame(header, BorrowFloats(huge))).error_code() ==
        grpc::StatusCode::RESOURCE_EXHAUSTED);
  grpc::Slice junk("\xff\xff\xff\x7f garbage", 12);
  CHECK(call(grpc::ByteBuffer(&junk, 1)).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  header.mutable_update()->set_num_floats(1000);
  std::vector<float> short_payload(10, 0.0f);
  CHECK(call(EncodeFrame(header, BorrowFloats(short_payload))).error_code() ==
        grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(cluster.logic[0]->Stats().pushes_applied == 0);
}

TEST_CASE("gRPC: a pull for a worker the job does not have is refused", "[grpc][validation]") {
  Cluster cluster(1000, 1, 1000);
  for (int index : {999, -7, 2}) {
    wire::PullRequest request;
    request.set_chunk_id(0);
    request.set_role(wire::ROLE_WORKER);
    request.set_index(index);
    INFO("worker " << index);
    CHECK(RawCall(cluster.addresses[0], "Pull", EncodeFrame(request)).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
  }
  CHECK(cluster.logic[0]->Stats().pulls_served == 0);
}

TEST_CASE(
    "gRPC: a repeated push is applied once; gaps, unnumbered and superseded pushes are refused",
    "[grpc][exactly-once]") {
  Cluster cluster(100, 1, 100);  // SGD at rate 1 on zero weights: w = -(sum of applied grads)
  wire::PushRequest header;
  header.mutable_update()->set_chunk_id(0);
  header.mutable_update()->set_num_floats(100);
  header.mutable_update()->set_incarnation(7);
  std::vector<float> ones(100, 1.0f);
  auto push = [&](uint64_t sequence) {
    header.mutable_update()->set_sequence(sequence);
    return RawCall(cluster.addresses[0], "Push", EncodeFrame(header, BorrowFloats(ones)));
  };
  auto weight = [&] {
    std::vector<float> w(100);
    REQUIRE(cluster.logic[0]->Read(0, absl::MakeSpan(w)).ok());
    return w[0];
  };
  REQUIRE(push(1).ok());
  REQUIRE(push(1).ok());  // a retry of push 1 (its reply was lost, say)
  REQUIRE(push(2).ok());
  REQUIRE(push(2).ok());
  CHECK(weight() == -2.0f);
  CHECK(cluster.logic[0]->Stats().pushes_duplicate == 2);
  const grpc::Status gap = push(4);
  CHECK(gap.error_code() == grpc::StatusCode::OUT_OF_RANGE);
  CHECK(gap.error_message().find("push 3 has not arrived") != std::string::npos);
  CHECK(push(0).error_code() == grpc::StatusCode::INVALID_ARGUMENT);  // no sequence number
  // An older process of worker 0, still running somewhere.
  header.mutable_update()->set_incarnation(6);
  const grpc::Status zombie = push(3);
  CHECK(zombie.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(zombie.error_message().find("superseded by incarnation 7") != std::string::npos);
  CHECK(weight() == -2.0f);
  const std::vector<LedgerEntry> ledger = cluster.logic[0]->Ledger();
  REQUIRE(ledger.size() == 2);  // chunk 0 x workers 0 and 1
  CHECK(ledger[0].processed == 2);
  CHECK(ledger[0].applied == 2);
  CHECK(ledger[0].sequence_sum == 3);
  CHECK(ledger[0].duplicates == 2);
}

TEST_CASE("gRPC: a worker that resumes learns where from; heartbeats keep it alive",
          "[grpc][reliability]") {
  Cluster cluster(100, 2, 50);
  {
    auto first = cluster.Connect("secret");
    REQUIRE(first.ok());
    CHECK((*first)->Resume()->sequence == 0);
    PushOrigin origin = Nth(1);
    origin.position = {5, 0, 320};
    REQUIRE(
        (*first)->PushAll(Finite(std::vector<float>(100, 1.0f)), ChunkVersions(2, 0), origin).ok());
  }
  // Push 2 reached server 0 only (the worker died in the middle of it).
  PushOrigin second = Nth(2);
  second.position = {10, 0, 640};
  REQUIRE(cluster.logic[0]->Push(0, 0, 1, std::vector<float>(50, 1.0f), second).ok());
  auto restarted = cluster.Connect("secret");
  REQUIRE(restarted.ok());
  const auto resume = (*restarted)->Resume();
  REQUIRE(resume.ok());
  CHECK(resume->sequence == 1);  // the most every server has
  CHECK(resume->position.step == 5);
  CHECK(resume->position.cursor == 320);
}

TEST_CASE(
    "ParameterServer: an unheard worker or evaluator is lost (async carries on, sync stops); it "
    "can rejoin",
    "[server][reliability]") {
  ModelSpec spec;
  spec.type = ModelType::kLinearRegression;
  spec.input_dim = 3;
  spec.output_dim = 1;
  spec.loss = LossType::kMeanSquaredError;
  const ShardingPlan plan = *ShardingPlan::Create(4, 1, 4);
  ServerRules rules;
  rules.peer_timeout = absl::Milliseconds(300);
  // The servers' clock, moved by each step; each Tick checks the peers.
  const ManualClock clock;
  SECTION("downpour: carries on") {
    ParameterServer server(0, plan, ModelInitialValues(spec, 1), rules, 2, false, clock,
                         ServerTicks::kByOwner);
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 0, 1, "ipv4:10.0.0.1:5").ok());
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 1, 1, "ipv4:10.0.0.2:6").ok());
    for (int i = 0; i < 8; ++i) {  // worker 0 keeps beating, worker 1 is silent
      clock.Advance(absl::Milliseconds(100));
      server.Tick(clock.Now());
      REQUIRE(server.Heartbeat(RoleKind::kWorker, 0, 1).ok());
    }
    CHECK(server.Stats().workers_lost == std::vector<int>{1});
    CHECK(server.Health().ok());
    const std::vector<std::string> events = server.TakeEvents();
    REQUIRE(events.size() == 1);
    CHECK(events[0].find("worker 1 (ipv4:10.0.0.2:6) lost") != std::string::npos);
    REQUIRE(server.Finish(RoleKind::kWorker, 0).ok());
    CHECK(server.AllFinished());  // the lost worker does not hold the job up
    // A restarted worker 1 rejoins.
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 1, 2, "ipv4:10.0.0.2:7").ok());
    CHECK(server.Stats().workers_lost.empty());
    CHECK(!server.AllFinished());
  }
  SECTION("an unheard evaluator is lost: the job finishes without it; it can come back") {
    ParameterServer server(0, plan, ModelInitialValues(spec, 1), rules, 1,
                           /*evaluator_expected=*/true, clock,
                         ServerTicks::kByOwner);
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 0, 1, "ipv4:10.0.0.1:5").ok());
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kEvaluator, 0, 0, "ipv4:10.0.0.3:7").ok());
    for (int i = 0; i < 4; ++i) {  // both beat
      clock.Advance(absl::Milliseconds(100));
      server.Tick(clock.Now());
      REQUIRE(server.Heartbeat(RoleKind::kWorker, 0, 1).ok());
      REQUIRE(server.Heartbeat(RoleKind::kEvaluator, 0, 0).ok());
    }
    REQUIRE(server.Finish(RoleKind::kWorker, 0).ok());
    CHECK(!server.AllFinished());  // the evaluator still has the final weights to score
    CHECK(server.TakeEvents().empty());
    clock.Advance(absl::Milliseconds(800));  // the evaluator falls silent
    server.Tick(clock.Now());
    CHECK(server.AllFinished());
    CHECK(server.Health().ok());
    std::vector<std::string> events = server.TakeEvents();
    REQUIRE(events.size() == 1);
    CHECK(events[0].find("evaluator (ipv4:10.0.0.3:7) lost: nothing heard for") !=
          std::string::npos);
    REQUIRE(server.Heartbeat(RoleKind::kEvaluator, 0, 0).ok());
    CHECK(!server.AllFinished());
    events = server.TakeEvents();
    REQUIRE(events.size() == 1);
    CHECK(events[0].find("evaluator (ipv4:10.0.0.3:7) is back") != std::string::npos);
  }
  SECTION(
      "a worker or evaluator never heard from is lost after the join timeout; it may join late") {
    rules.join_timeout = absl::Milliseconds(500);
    ParameterServer server(0, plan, ModelInitialValues(spec, 1), rules, 2,
                           /*evaluator_expected=*/true, clock,
                         ServerTicks::kByOwner);
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 0, 1, "ipv4:10.0.0.1:5").ok());
    for (int i = 0; i < 4; ++i) {  // only worker 0 is ever heard: not yet the join timeout
      clock.Advance(absl::Milliseconds(100));
      server.Tick(clock.Now());
      REQUIRE(server.Heartbeat(RoleKind::kWorker, 0, 1).ok());
    }
    CHECK(server.Stats().workers_lost.empty());
    CHECK(server.TakeEvents().empty());
    for (int i = 0; i < 5; ++i) {
      clock.Advance(absl::Milliseconds(100));
      server.Tick(clock.Now());
      REQUIRE(server.Heartbeat(RoleKind::kWorker, 0, 1).ok());
    }
    CHECK(server.Stats().workers_lost == std::vector<int>{1});
    std::vector<std::string> events = server.TakeEvents();
    REQUIRE(events.size() == 2);
    std::sort(events.begin(), events.end());
    CHECK(events[0].find("evaluator (address unknown) lost: never heard from since the server "
                         "started, ") != std::string::npos);
    CHECK(events[1].find("worker 1 (address unknown) lost: never heard from since the server "
                         "started, ") != std::string::npos);
    REQUIRE(server.Finish(RoleKind::kWorker, 0).ok());
    CHECK(server.AllFinished());  // neither holds the job up any longer
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 1, 1, "ipv4:10.0.0.2:6").ok());
    CHECK(server.Stats().workers_lost.empty());  // a late worker still joins
    CHECK(!server.AllFinished());
  }
  SECTION("sync with every worker in the quorum: stops, naming the worker") {
    rules.algorithm = Algorithm::kSync;
    rules.stop_on_worker_loss = true;
    ParameterServer server(0, plan, ModelInitialValues(spec, 1), rules, 2, false, clock,
                         ServerTicks::kByOwner);
    REQUIRE(server.Hello(plan.fingerprint(), RoleKind::kWorker, 1, 1, "ipv4:10.0.0.2:6").ok());
    clock.Advance(absl::Milliseconds(800));
    server.Tick(clock.Now());
    const absl::Status health = server.Health();
    CHECK(absl::IsUnavailable(health));
    CHECK(std::string(health.message()).find("worker 1 (ipv4:10.0.0.2:6) lost") == 0);
  }
}

TEST_CASE("gRPC: a server that has gone away is reported by index and address",
          "[grpc][reliability]") {
  Cluster cluster(100, 2, 50);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
  cluster.grpc_servers[1]->Shutdown();
  std::vector<float> params(100);
  const absl::Status pulled = (*client)->PullAll(absl::MakeSpan(params), {}, nullptr).status();
  REQUIRE(absl::IsUnavailable(pulled));
  CHECK(std::string(pulled.message()).rfind("server 1 (" + cluster.addresses[1] + ")", 0) == 0);
}

TEST_CASE("gRPC: a sync pull waits on the server until the round is applied", "[grpc][sync]") {
  Cluster cluster(100, 2, 50, Algorithm::kSync);
  auto a = cluster.Connect("secret", 4, 0), b = cluster.Connect("secret", 4, 1);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<float> params(100);
  ChunkVersions versions;
  REQUIRE((*a)->PullAll(absl::MakeSpan(params), {}, &versions).ok());
  REQUIRE((*a)->PushAll(Finite(std::vector<float>(100, 1.0f)), versions, Nth(1)).ok());
  // Worker 0 waits for round 1 in another thread; worker 1's push completes the round.
  absl::StatusOr<PullResult> waited = absl::UnknownError("not done");
  std::vector<float> next(100);
  std::thread waiter([&] { waited = (*a)->PullAll(absl::MakeSpan(next), {{1, 1}, 0}, nullptr); });
  // The waiting pull reaches the server and parks there; only the first pull is served.
  for (int i = 0; i < 500 && cluster.logic[0]->Stats().pulls_waiting == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  CHECK(cluster.logic[0]->Stats().pulls_waiting > 0);
  CHECK(cluster.logic[0]->Stats().pulls_served == 1);
  REQUIRE((*b)->PushAll(Finite(std::vector<float>(100, 3.0f)), versions, Nth(1)).ok());
  waiter.join();
  REQUIRE(waited.ok());
  CHECK(waited->min_version == 1);
  CHECK(next[0] == -2.0f);  // mean of 1 and 3 at rate 1
  // A wait that nobody will satisfy ends at the RPC deadline, not never.
  GrpcPsClientOptions quick;
  quick.secrets.token = "secret";
  quick.rpc_timeout = absl::Milliseconds(300);
  quick.local = TestPath();
  auto impatient =
      GrpcPsClient::Connect(cluster.addresses, cluster.plan, {RoleKind::kWorker, 0}, quick);
  REQUIRE(impatient.ok());
  const auto never = (*impatient)->PullAll(absl::MakeSpan(next), {{9, 9}, 0}, nullptr);
  CHECK(absl::IsDeadlineExceeded(never.status()));
}

TEST_CASE("gRPC: the elastic exchange returns d and moves the centre by it", "[grpc][easgd]") {
  Cluster cluster(100, 2, 50, Algorithm::kEasgd);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
  std::vector<float> weights(100, 4.0f), d(100);
  ChunkVersions versions(cluster.plan.num_chunks(), 0);
  auto summary = (*client)->ExchangeAll(weights, absl::MakeSpan(d), &versions, Nth(1, 0.25));
  REQUIRE(summary.ok());
  CHECK(summary->mean_staleness == 0);
  CHECK(versions == ChunkVersions{1, 1});
  // The centre starts at zero (linear model): d = 0.5 (4 - 0) = 2, and the centre is now 2.
  CHECK(std::all_of(d.begin(), d.end(), [](float v) { return v == 2.0f; }));
  std::vector<float> centre(100);
  REQUIRE((*client)->PullAll(absl::MakeSpan(centre), {}, nullptr).ok());
  CHECK(std::all_of(centre.begin(), centre.end(), [](float v) { return v == 2.0f; }));
  // Gradients are refused by an elastic job.
  const auto push = (*client)->PushAll(Finite(weights), versions, Nth(2));
  CHECK(absl::IsFailedPrecondition(push.status()));
}

TEST_CASE("gRPC: fp16 and sparse pushes arrive as the gradients they encode",
          "[grpc][compression]") {
  Cluster cluster(1000, 2, 250);  // 4 chunks of 250 over 2 servers; SGD at rate 1
  std::vector<float> grad(1000, 0.0f);
  for (size_t i = 0; i < grad.size(); i += 10) grad[i] = 0.5f + static_cast<float>(i);
  ChunkVersions base(cluster.plan.num_chunks(), 0);
  std::vector<float> params(1000);
  SECTION("fp16: half the bytes, values rounded to half precision") {
    auto client = cluster.Connect("secret", 4, 0, Compression::kFp16);
    REQUIRE(client.ok());
    REQUIRE((*client)->PushAll(Finite(grad), base, Nth(1)).ok());
    CHECK((*client)->counters().bytes_sent == 1000 * 2);
    REQUIRE((*client)->PullAll(absl::MakeSpan(params), {}, nullptr).ok());
    for (size_t i = 0; i < grad.size(); ++i) {
      REQUIRE(params[i] == -HalfToFloat(FloatToHalf(grad[i])));
    }
  }
  SECTION("topk: a sparse chunk travels as index/value pairs, exactly") {
    auto client = cluster.Connect("secret", 4, 0, Compression::kTopk);
    REQUIRE(client.ok());
    REQUIRE((*client)->PushAll(Finite(grad), base, Nth(1)).ok());
    CHECK((*client)->counters().bytes_sent == 100 * 8);  // 100 nonzero values
    REQUIRE((*client)->PullAll(absl::MakeSpan(params), {}, nullptr).ok());
    for (size_t i = 0; i < grad.size(); ++i) REQUIRE(params[i] == -grad[i]);
  }
}

TEST_CASE("gRPC: a sparse push with an index outside its chunk is refused",
          "[grpc][compression][validation]") {
  Cluster cluster(100, 1, 100);
  auto channel = grpc::CreateChannel(cluster.addresses[0], grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  wire::PushRequest header;
  header.mutable_update()->set_chunk_id(0);
  header.mutable_update()->set_sequence(1);
  header.mutable_update()->set_num_floats(100);
  header.set_encoding(wire::ENCODING_SPARSE_F32);
  header.set_nnz(1);
  uint32_t* pair = nullptr;
  grpc::Slice payload = AllocatePayload(2, &pair);
  pair[0] = 100;  // one past the end
  const float one = 1.0f;
  std::memcpy(&pair[1], &one, sizeof(one));
  const grpc::Status status =
      RawCall(cluster.addresses[0], "Push", EncodeFrame(header, std::move(payload)));
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message().find("sparse push index 100 outside") != std::string::npos);
  std::vector<float> w(100);
  REQUIRE(cluster.logic[0]->Read(0, absl::MakeSpan(w)).ok());
  CHECK(std::all_of(w.begin(), w.end(), [](float v) { return v == 0.0f; }));
}

// Hello as worker `worker` with `host_identity` (empty: one that wants no segment) that asks
// for `slots` slots; the reply.
wire::HelloResponse HelloFrom(const std::string& address, const ShardingPlan& plan,
                              const std::string& host_identity, uint32_t slots = 6,
                              int worker = 0) {
  wire::HelloRequest hello;
  hello.set_role(wire::ROLE_WORKER);
  hello.set_index(worker);
  hello.set_plan_fingerprint(plan.fingerprint());
  hello.set_incarnation(1);
  hello.set_host_identity(host_identity);
  hello.set_segment_slots(slots);
  grpc::ByteBuffer reply;
  REQUIRE(RawCall(address, "Hello", EncodeFrame(hello), &reply).ok());
  wire::HelloResponse response;
  REQUIRE(ReceivedFrame::Parse(reply, &response).ok());
  return response;
}

TEST_CASE("shared memory: a server offers a segment only to a client on its own host",
          "[grpc][shm]") {
  Cluster cluster(1000, 2, 250);
  CHECK(HelloFrom(cluster.addresses[0], cluster.plan, "").segment().id() == 0);
  CHECK(HelloFrom(cluster.addresses[0], cluster.plan, "another-boot/net:1/pid:1").segment().id() ==
        0);
  // 4 chunks of 250 floats, 2 on this server: slots of 1024 bytes, at most 3 per chunk.
  const wire::HelloResponse local =
      HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity(), 1000);
  CHECK(local.segment().id() != 0);
  CHECK(local.segment().pid() == getpid());
  CHECK(local.segment().slots() == 6);
  CHECK(local.segment().slot_bytes() == 1024);
  CHECK(local.segment().bytes() == 7 * kSegmentPage + 6 * 1024);
  // With it, the server's chunk window: 2 chunks of 250 floats, each after a 64-byte header.
  CHECK(local.segment().window_bytes() == 2 * (64 + 1024));
  CHECK(local.segment().window_bytes() == ChunkWindow::BytesFor(cluster.plan, 0));
}

// A raw pull of chunk 1 as worker 0 asking for its values `from_window`; the reply's header
// and its payload's bytes.
std::pair<wire::PullResponse, size_t> RawPull(const std::string& address, bool from_window) {
  wire::PullRequest request;
  request.set_chunk_id(1);
  request.set_role(wire::ROLE_WORKER);
  request.set_from_window(from_window);
  grpc::ByteBuffer reply;
  REQUIRE(RawCall(address, "Pull", EncodeFrame(request), &reply).ok());
  wire::PullResponse header;
  auto frame = ReceivedFrame::Parse(reply, &header);
  REQUIRE(frame.ok());
  return {header, frame->payload_bytes()};
}

TEST_CASE("shared memory: a pull that asks to read the window gets no values once there is one",
          "[grpc][shm]") {
  Cluster cluster(1000, 1, 250);
  CHECK(RawPull(cluster.addresses[0], true).second == 1000);           // no window yet: the values
  HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity());  // makes the window
  const auto [header, bytes] = RawPull(cluster.addresses[0], true);
  CHECK(header.payload_in_window());
  CHECK(bytes == 0);
  CHECK(RawPull(cluster.addresses[0], false).second == 1000);
  CHECK(cluster.logic[0]->Stats().pulls_served == 3);
}

TEST_CASE("shared memory: a DC-ASGD server offers no chunk window: it must see every pull",
          "[grpc][shm]") {
  StalenessConfig dc_asgd;
  dc_asgd.dc_lambda = 0.5;
  Cluster cluster(1000, 1, 250, Algorithm::kDownpour, dc_asgd);
  const wire::SegmentOffer offer =
      HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity()).segment();
  CHECK(offer.id() != 0);
  CHECK(offer.window_bytes() == 0);
}

TEST_CASE(
    "shared memory: once its server has shut down, a pull fails instead of reading the "
    "window it left",
    "[grpc][shm]") {
  Cluster cluster(1000, 1, 250);
  auto client = cluster.Connect("secret");
  REQUIRE(client.ok());
  std::vector<float> params(1000);
  REQUIRE((*client)->PullAll(absl::MakeSpan(params), {}, nullptr).ok());
  cluster.grpc_servers[0]->Shutdown();
  const absl::StatusOr<PullResult> pulled = (*client)->PullAll(absl::MakeSpan(params), {}, nullptr);
  CHECK(absl::IsUnavailable(pulled.status()));
}

TEST_CASE("shared memory: a push naming a segment the server does not hold, a slot it does not "
          "have or more bytes than a slot, is refused and changes nothing",
          "[grpc][shm][validation]") {
  Cluster cluster(1000, 1, 250);  // 4 chunks of 250 floats: 1024-byte slots
  const uint64_t id =
      HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity()).segment().id();
  REQUIRE(id != 0);
  auto push = [&](uint64_t segment, uint64_t bytes, uint64_t floats, uint32_t slot = 0) {
    wire::PushRequest header;
    header.mutable_update()->set_chunk_id(1);
    header.mutable_update()->set_sequence(1);
    header.mutable_update()->set_num_floats(floats);
    header.mutable_segment()->set_id(segment);
    header.mutable_segment()->set_request(true);
    header.mutable_segment()->set_request_bytes(bytes);
    header.mutable_segment()->set_request_slot(slot);
    return RawCall(cluster.addresses[0], "Push", EncodeFrame(header));
  };
  const grpc::Status stale = push(id + 1, 1000, 250);
  CHECK(stale.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(stale.error_message().find("does not hold") != std::string::npos);
  const grpc::Status oversize = push(id, 1028, 257);
  CHECK(oversize.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(oversize.error_message().find("in a slot of 1024") != std::string::npos);
  const grpc::Status outside = push(id, 1000, 250, 6);
  CHECK(outside.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(outside.error_message().find("slot 6 of a shared segment of 6") != std::string::npos);
  // A second Hello replaces the segment: the first one's id is stale now.
  HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity());
  CHECK(push(id, 1000, 250).error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(cluster.logic[0]->Stats().pushes_applied == 0);
  std::vector<float> w(250);
  REQUIRE(cluster.logic[0]->Read(1, absl::MakeSpan(w)).ok());
  CHECK(std::all_of(w.begin(), w.end(), [](float v) { return v == 0.0f; }));
}

// A client's side of the segment `offer` (from a Hello as worker 0), mapped in this process.
std::unique_ptr<SegmentSlots> MapSegment(const wire::SegmentOffer& offer,
                                         const ShardingPlan& plan) {
  auto memory = SharedSegment::Attach(offer.pid(), offer.fd(), offer.bytes());
  REQUIRE(memory.ok());
  return std::make_unique<SegmentSlots>(*std::move(memory), offer.id(),
                                        SegmentLayout::For(plan, offer.slots()), offer.pid());
}

// A push of chunk 1 (250 ones in slot 0 of `slots`) through the segment, as worker `worker`
// naming segment `id`; its answer.
absl::StatusOr<grpc::ByteBuffer> PushThroughSegment(SegmentSlots& slots, int worker, uint64_t id) {
  const int slot = slots.Claim();
  REQUIRE(slot == 0);
  std::vector<float> ones(250, 1.0f);
  std::memcpy(slots.At(slot), ones.data(), 1000);
  wire::PushRequest header;
  header.mutable_update()->set_chunk_id(1);
  header.mutable_update()->set_worker_index(worker);
  header.mutable_update()->set_incarnation(1);  // HelloFrom's
  header.mutable_update()->set_sequence(1);
  header.mutable_update()->set_num_floats(250);
  header.mutable_segment()->set_id(id);
  header.mutable_segment()->set_request(true);
  header.mutable_segment()->set_request_bytes(1000);
  header.mutable_segment()->set_request_slot(slot);
  absl::StatusOr<grpc::ByteBuffer> answer;
  absl::Notification answered;
  slots.Call(slot, {SegmentMethod::kPush, EncodeFrame(header), absl::Now() + absl::Seconds(10)},
             [&](absl::StatusOr<grpc::ByteBuffer> a) {
               answer = std::move(a);
               answered.Notify();
             });
  answered.WaitForNotification();
  return answer;
}

TEST_CASE(
    "shared memory: calls through a segment are its client's, published whole, and end "
    "when the server shuts down",
    "[grpc][shm][security]") {
  Cluster cluster(1000, 1, 250);  // 4 chunks of 250 floats: 1024-byte slots
  const wire::SegmentOffer offer =
      HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity()).segment();
  REQUIRE(offer.id() != 0);
  std::unique_ptr<SegmentSlots> slots = MapSegment(offer, cluster.plan);
  std::vector<float> w(250);
  SECTION("a push naming another worker's segment is refused and changes nothing") {
    const uint64_t other =
        HelloFrom(cluster.addresses[0], cluster.plan, LocalHostIdentity(), 6, 1).segment().id();
    const absl::StatusOr<grpc::ByteBuffer> answer = PushThroughSegment(*slots, 1, other);
    CHECK(absl::IsPermissionDenied(answer.status()));
    CHECK(std::string(answer.status().message()).find("another client's shared segment") !=
          std::string::npos);
    CHECK(cluster.logic[0]->Stats().pushes_applied == 0);
  }
  SECTION("a request left unpublished is never served; a published one is, once") {
    auto raw = SharedSegment::Attach(offer.pid(), offer.fd(), offer.bytes());
    REQUIRE(raw.ok());
    SlotCall* call = SegmentLayout::Call((*raw)->data(), 0);
    call->frame_bytes = 3;  // half-written: never published
    Ring(SegmentLayout::Bells((*raw)->data())->to_server);
    absl::SleepFor(absl::Milliseconds(100));
    CHECK(call->state.load() == SlotCall::kIdle);
    CHECK(cluster.logic[0]->Stats().pushes_applied == 0);
    const absl::StatusOr<grpc::ByteBuffer> answer = PushThroughSegment(*slots, 0, offer.id());
    REQUIRE(answer.ok());
    wire::PushResponse response;
    REQUIRE(ReceivedFrame::Parse(*answer, &response).ok());
    CHECK(response.applied());
    CHECK(cluster.logic[0]->Stats().pushes_applied == 1);
    REQUIRE(cluster.logic[0]->Read(1, absl::MakeSpan(w)).ok());
    CHECK(std::all_of(w.begin(), w.end(), [](float v) { return v == -1.0f; }));
  }
  SECTION("after the server shuts down, a call ends at once, unavailable") {
    cluster.grpc_servers[0]->Shutdown();
    const absl::Time start = absl::Now();
    const absl::StatusOr<grpc::ByteBuffer> answer = PushThroughSegment(*slots, 0, offer.id());
    CHECK(absl::IsUnavailable(answer.status()));
    CHECK(absl::Now() - start < absl::Seconds(1));
    CHECK(cluster.logic[0]->Stats().pushes_applied == 0);
  }
}

}  // namespace
}  // namespace monsoon
