#include "server/parameter_server.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/config/derived_values.h"
#include "server/update_rule.h"
#include "tests/manual_clock.h"

namespace monsoon {
namespace {

ModelSpec TinyModel() {
  ModelSpec spec;
  spec.type = ModelType::kSoftmaxRegression;
  spec.input_dim = 3;
  spec.output_dim = 2;  // 3*2 + 2 = 8 parameters
  return spec;
}

std::unique_ptr<ParameterServer> MakeServer(const ShardingPlan& plan, int index,
                                            OptimizerSpec opt = {}, ServerRules rules = {},
                                            int workers = 2) {
  rules.optimizer = opt;
  return std::make_unique<ParameterServer>(index, plan, ModelInitialValues(TinyModel(), /*seed=*/5),
                                           rules, workers,
                                           /*evaluator=*/true);
}

ServerRules Rules(Algorithm algorithm) {
  ServerRules rules;
  rules.algorithm = algorithm;
  return rules;
}

std::vector<float> Values(ParameterServer& server, int chunk = 0, size_t size = 8) {
  std::vector<float> w(size);
  REQUIRE(server.Read(chunk, absl::MakeSpan(w)).ok());
  return w;
}

TEST_CASE("ParameterServer: holds its chunks at the model's initial values", "[server][downpour]") {
  auto plan = ShardingPlan::Create(8, 2, 3);  // chunks of 3, 3, 2 -> server 0: {0, 2}
  REQUIRE(plan.ok());
  auto server = MakeServer(*plan, 0);
  std::vector<float> expected(8);
  Model::InitialValues(TinyModel(), 5, 0, absl::MakeSpan(expected));
  std::vector<float> chunk(2);
  auto info = server->Pull(2, absl::MakeSpan(chunk));
  REQUIRE(info.ok());
  CHECK(info->version == 0);
  CHECK(chunk[0] == expected[6]);
  CHECK(absl::IsNotFound(server->Pull(1, absl::MakeSpan(chunk)).status()));
}

TEST_CASE("Downpour: each push is applied at once by the server optimizer", "[server][downpour]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec opt;
  opt.type = OptimizerType::kMomentum;
  opt.learning_rate = 0.1f;
  opt.momentum = 0.5f;
  auto server = MakeServer(*plan, 0, opt);
  std::vector<float> w0(8), w(8);
  REQUIRE(server->Pull(0, absl::MakeSpan(w0)).ok());
  const std::vector<float> g1(8, 1.0f), g2(8, -2.0f);
  CHECK(server->Push(0, 0, 0, g1)->version == 1);
  CHECK(server->Push(0, 1, 0, g2)->version == 2);
  REQUIRE(server->Pull(0, absl::MakeSpan(w)).ok());
  // v1 = 1, w1 = w0 - 0.1; v2 = 0.5 - 2 = -1.5, w2 = w1 + 0.15.
  for (int i = 0; i < 8; ++i) CHECK(w[i] == Approx(w0[i] - 0.1 + 0.15));
  CHECK(server->Stats().pushes_applied == 2);
}

TEST_CASE("Cosine schedule: a push is applied at the rate of the epoch it was computed at",
          "[server][downpour][sync]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  ServerRules rules;
  rules.learning_rate = {LearningRateSchedule::kCosine, 4, 0};
  auto downpour = MakeServer(*plan, 0, sgd, rules);
  const auto w0 = Values(*downpour);
  PushOrigin origin;
  origin.epoch = 2;  // halfway: rate 0.5
  REQUIRE(downpour->Push(0, 0, 0, std::vector<float>(8, 1.0f), origin).ok());
  const auto w1 = Values(*downpour);
  for (int i = 0; i < 8; ++i) CHECK(w1[i] == Approx(w0[i] - 0.5));
  origin.epoch = 4;  // the end: rate 0
  REQUIRE(downpour->Push(0, 1, 1, std::vector<float>(8, 1.0f), origin).ok());
  CHECK(Values(*downpour) == w1);
  // A sync round takes the rate of its furthest gradient's epoch.
  rules.algorithm = Algorithm::kSync;
  auto sync = MakeServer(*plan, 0, sgd, rules, /*workers=*/2);
  origin.epoch = 1;
  REQUIRE(sync->Push(0, 0, 0, std::vector<float>(8, 2.0f), origin).ok());
  origin.epoch = 2;
  REQUIRE(sync->Push(0, 1, 0, std::vector<float>(8, 2.0f), origin)->version == 1);
  const auto s1 = Values(*sync);
  for (int i = 0; i < 8; ++i) CHECK(s1[i] == Approx(w0[i] - 1.0));  // mean 2 at rate 0.5
}

TEST_CASE("ParameterServer: a snapshot keeps the values it was taken at, without a copy",
          "[server][downpour]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0);
  auto first = server->Snapshot(0);
  REQUIRE(first.ok());
  const std::vector<float> w0 = *first->values;
  auto second = server->Snapshot(0);
  REQUIRE(second.ok());
  CHECK(second->values.get() == first->values.get());  // shared while nothing changed

  REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 1.0f)).ok());
  CHECK(*first->values == w0);  // the update went to a buffer of its own
  const std::vector<float> w1 = Values(*server);
  CHECK(w1 != w0);
  auto third = server->Snapshot(0);
  REQUIRE(third.ok());
  CHECK(third->info.version == 1);
  CHECK(*third->values == w1);

  // Once no snapshot holds the buffer, updates go to it in place; a snapshot outlives the server.
  const std::vector<float>* current = third->values.get();
  third->values.reset();
  REQUIRE(server->Push(0, 0, 1, std::vector<float>(8, 1.0f)).ok());
  auto fourth = server->Snapshot(0);
  REQUIRE(fourth.ok());
  CHECK(fourth->values.get() == current);
  server.reset();
  CHECK(*first->values == w0);
  CHECK(fourth->values->size() == 8);
}

// Writes `server`'s checkpoint into TEST_TMPDIR/NAME, which keeps the newest `keep`; that
// directory.
std::string WriteCheckpoint(const ParameterServer& server, const std::string& name, int keep) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  auto out = CheckpointWriter::Begin(dir);
  REQUIRE(out.ok());
  server.SaveCheckpoint(out->get());
  REQUIRE((*out)->Commit(keep).ok());
  return dir;
}

// Chunk `chunk` (of `size` floats) read through a window mapped as a client maps it; its
// version into *version.
std::vector<float> ReadWindow(const ChunkWindow& window, int chunk, size_t size,
                              uint64_t* version) {
  std::vector<float> w(size);
  WindowedChunk seen;
  REQUIRE(window.Read(chunk, 0, absl::MakeSpan(w), &seen));
  *version = seen.version;
  return w;
}

TEST_CASE(
    "ParameterServer: with a chunk window, every update is published in it; snapshots, "
    "reads and checkpoints still see each version",
    "[server][downpour][shm]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0);
  auto first = server->Snapshot(0);
  REQUIRE(first.ok());
  const std::vector<float> w0 = *first->values;
  auto made = server->Window();
  REQUIRE(made.ok());
  REQUIRE(*made != nullptr);
  auto client = ChunkWindow::Attach(*plan, 0, getpid(), (*made)->fd(), (*made)->bytes());
  REQUIRE(client.ok());
  uint64_t version = 99;
  CHECK(ReadWindow(**client, 0, 8, &version) == w0);
  CHECK(version == 0);
  CHECK(server->state_bytes() == 8 * sizeof(float) + (*made)->bytes());

  REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 1.0f)).ok());
  const std::vector<float> w1 = ReadWindow(**client, 0, 8, &version);
  CHECK(version == 1);
  CHECK(w1 != w0);
  CHECK(*first->values == w0);  // a snapshot keeps its values
  CHECK(Values(*server) == w1);
  auto second = server->Snapshot(0);
  auto third = server->Snapshot(0);
  CHECK(second->values.get() == third->values.get());  // shared while nothing changed
  CHECK(third->info.version == 1);

  const std::string dir = WriteCheckpoint(*server, "window_checkpoint", 1);
  REQUIRE(server->Push(0, 0, 1, std::vector<float>(8, 1.0f)).ok());
  CHECK(ReadWindow(**client, 0, 8, &version) != w1);
  std::vector<std::string> skipped;
  auto in = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(in.ok());
  REQUIRE(server->LoadCheckpoint(in->get()).ok());
  CHECK(ReadWindow(**client, 0, 8, &version) == w1);  // the checkpoint held version 1
  CHECK(version == 1);
  CHECK(Values(*server) == w1);
}

TEST_CASE(
    "ParameterServer: wrong-size, NaN/Inf and unknown-chunk pushes are rejected and leave "
    "the weights unchanged",
    "[server][validation]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0);
  std::vector<float> before(8), after(8);
  REQUIRE(server->Pull(0, absl::MakeSpan(before)).ok());
  std::vector<float> nan_grad(8, 0.5f);
  nan_grad[3] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> inf_grad(8, 0.5f);
  inf_grad[7] = std::numeric_limits<float>::infinity();
  auto nan = server->Push(0, 0, 0, nan_grad);
  CHECK(absl::IsInvalidArgument(nan.status()));
  CHECK(std::string(nan.status().message()).find("not finite at element 3") != std::string::npos);
  CHECK(absl::IsInvalidArgument(server->Push(0, 0, 0, inf_grad).status()));
  CHECK(absl::IsInvalidArgument(server->Push(0, 0, 0, std::vector<float>(7, 1.0f)).status()));
  CHECK(absl::IsNotFound(server->Push(9, 0, 0, std::vector<float>(8, 1.0f)).status()));
  CHECK(absl::IsInvalidArgument(server->Push(0, 5, 0, std::vector<float>(8, 1.0f)).status()));
  // A gradient claiming a version the chunk has not reached.
  CHECK(absl::IsInvalidArgument(server->Push(0, 0, 7, std::vector<float>(8, 1.0f)).status()));
  // Weights where this job expects gradients.
  std::vector<float> d(8);
  CHECK(absl::IsFailedPrecondition(
      server->Exchange(0, 0, 0, std::vector<float>(8, 1.0f), absl::MakeSpan(d)).status()));
  REQUIRE(server->Pull(0, absl::MakeSpan(after)).ok());
  CHECK(after == before);
  CHECK(server->Stats().pushes_rejected == 7);
  CHECK(server->Stats().pushes_applied == 0);
}

TEST_CASE("ParameterServer: finishes once every worker and the evaluator are done", "[server]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0);
  CHECK_FALSE(server->AllFinished());
  REQUIRE(server->Finish(RoleKind::kWorker, 0).ok());
  REQUIRE(server->Finish(RoleKind::kWorker, 1).ok());
  CHECK_FALSE(server->WaitAllFinished(absl::Milliseconds(10)));
  CHECK(server->Stats().workers_finished == 2);
  REQUIRE(server->Finish(RoleKind::kEvaluator, 0).ok());
  CHECK(server->WaitAllFinished(absl::Milliseconds(10)));
  CHECK(absl::IsInvalidArgument(server->Finish(RoleKind::kWorker, 2)));
}

TEST_CASE("ParameterServer: a client with another layout is refused", "[server]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto other = ShardingPlan::Create(9, 1, 8);
  auto server = MakeServer(*plan, 0);
  CHECK(server->Hello(plan->fingerprint(), RoleKind::kWorker, 0).ok());
  CHECK(absl::IsFailedPrecondition(
      server->Hello(other->fingerprint(), RoleKind::kWorker, 0).status()));
}

TEST_CASE("Adam on the server: state sharded with the chunk, bias-corrected by its version",
          "[server][optimizer]") {
  auto plan = ShardingPlan::Create(8, 2, 4);  // two chunks, one per server
  OptimizerSpec adam;
  adam.type = OptimizerType::kAdam;
  adam.learning_rate = 0.1f;
  auto s0 = MakeServer(*plan, 0, adam), s1 = MakeServer(*plan, 1, adam);
  const auto w0 = Values(*s0, 0, 4);
  REQUIRE(s0->Push(0, 0, 0, std::vector<float>(4, 2.0f)).ok());
  // First Adam step: each coordinate moves by eta against its gradient's sign.
  const auto w1 = Values(*s0, 0, 4);
  for (int i = 0; i < 4; ++i) CHECK(w1[i] == Approx(w0[i] - 0.1));
  // Server 1 has not stepped: its chunk's first update is again a full eta step.
  const auto v0 = Values(*s1, 1, 4);
  REQUIRE(s1->Push(1, 0, 0, std::vector<float>(4, -0.5f)).ok());
  const auto v1 = Values(*s1, 1, 4);
  for (int i = 0; i < 4; ++i) CHECK(v1[i] == Approx(v0[i] + 0.1));
}

TEST_CASE("Staleness: every push's staleness is counted; drop discards above the bound",
          "[server][staleness]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  ServerRules rules = Rules(Algorithm::kDownpour);
  rules.staleness.policy = StalenessPolicy::kDrop;
  rules.staleness.bound = 1;
  auto server = MakeServer(*plan, 0, sgd, rules);
  const std::vector<float> g(8, 1.0f);
  REQUIRE(server->Push(0, 0, 0, g)->applied);  // staleness 0 -> version 1
  REQUIRE(server->Push(0, 1, 0, g)->applied);  // staleness 1 -> version 2
  const auto before = Values(*server);
  auto late = server->Push(0, 1, 0, g);  // staleness 2 > bound
  REQUIRE(late.ok());
  CHECK_FALSE(late->applied);
  CHECK(late->staleness == 2);
  CHECK(late->version == 2);
  CHECK(Values(*server) == before);
  const ServerStats stats = server->Stats();
  CHECK(stats.pushes_dropped == 1);
  CHECK(stats.pushes_applied == 2);
  CHECK(stats.staleness_histogram[0] == 1);
  CHECK(stats.staleness_histogram[1] == 1);
  CHECK(stats.staleness_histogram[2] == 1);
}

TEST_CASE("Staleness: scale applies a stale gradient at 1 / staleness", "[server][staleness]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  ServerRules rules = Rules(Algorithm::kDownpour);
  rules.staleness.policy = StalenessPolicy::kScale;
  auto server = MakeServer(*plan, 0, sgd, rules);
  const std::vector<float> g(8, 1.0f);
  for (int i = 0; i < 4; ++i) REQUIRE(server->Push(0, 0, i, g).ok());  // versions 1..4
  const auto before = Values(*server);
  REQUIRE(server->Push(0, 1, 0, g)->staleness == 4);
  const auto after = Values(*server);
  for (int i = 0; i < 8; ++i) CHECK(after[i] == Approx(before[i] - 0.25));
  CHECK(StalenessWeight(rules.staleness, 0) == 1.0f);
}

TEST_CASE("DC-ASGD: a stale gradient is compensated by lambda g^2 (w_now - w_pulled)",
          "[server][staleness]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  ServerRules rules = Rules(Algorithm::kDownpour);
  rules.staleness.dc_lambda = 0.5;
  auto server = MakeServer(*plan, 0, sgd, rules);
  std::vector<float> w0(8);
  REQUIRE(server->Read(0, absl::MakeSpan(w0), /*worker=*/1).ok());
  REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 0.5f)).ok());  // w1 = w0 - 0.5
  // Worker 1's gradient 2 was computed on w0: 2 + 0.5 * 2^2 * (w1 - w0) = 2 - 1 = 1.
  REQUIRE(server->Push(0, 1, 0, std::vector<float>(8, 2.0f)).ok());
  const auto w2 = Values(*server);
  for (int i = 0; i < 8; ++i) CHECK(w2[i] == Approx(w0[i] - 1.5));
  std::vector<float> out(1);
  CompensateDelay(0.25f, std::vector<float>{-2.0f}, std::vector<float>{3.0f},
                  std::vector<float>{1.0f}, absl::MakeSpan(out));
  CHECK(out[0] == Approx(-2.0 + 0.25 * 4 * 2));
}

TEST_CASE("Sync: one update per round equal to the mean of the pushed gradients",
          "[server][sync]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  auto server = MakeServer(*plan, 0, sgd, Rules(Algorithm::kSync), /*workers=*/3);
  const auto w0 = Values(*server);
  REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 1.0f))->version == 0);
  REQUIRE(server->Push(0, 1, 0, std::vector<float>(8, 2.0f))->version == 0);
  CHECK(Values(*server) == w0);  // nothing applied before the round is complete
  // The same worker cannot vote twice in a round.
  CHECK(absl::IsFailedPrecondition(server->Push(0, 1, 0, std::vector<float>(8, 2.0f)).status()));
  REQUIRE(server->Push(0, 2, 0, std::vector<float>(8, 6.0f))->version == 1);
  const auto w1 = Values(*server);
  for (int i = 0; i < 8; ++i) CHECK(w1[i] == Approx(w0[i] - 3.0));  // mean of 1, 2, 6
}

TEST_CASE("State rule: a push moves state 1/workers of the way, a sync round sets the mean",
          "[server][state]") {
  // 8 floats, the last 2 model state: chunk 0 trained, chunk 1 state.
  auto plan = ShardingPlan::Create(8, 1, 8, 2);
  REQUIRE(plan.ok());
  REQUIRE(plan->chunk(1).state);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  for (const Algorithm algorithm : {Algorithm::kDownpour, Algorithm::kSsp}) {
    auto server = MakeServer(*plan, 0, sgd, Rules(algorithm), /*workers=*/4);
    const std::vector<float> s0 = Values(*server, 1, 2);
    REQUIRE(server->Push(1, 0, 0, std::vector<float>{8.0f, -4.0f}).ok());
    const std::vector<float> s1 = Values(*server, 1, 2);
    CHECK(s1[0] == Approx(s0[0] + (8.0f - s0[0]) / 4));
    CHECK(s1[1] == Approx(s0[1] + (-4.0f - s0[1]) / 4));
  }
  auto sync = MakeServer(*plan, 0, sgd, Rules(Algorithm::kSync), /*workers=*/2);
  REQUIRE(sync->Push(1, 0, 0, std::vector<float>{1.0f, 2.0f}).ok());
  REQUIRE(sync->Push(1, 1, 0, std::vector<float>{3.0f, 6.0f})->version == 1);
  CHECK(Values(*sync, 1, 2) == std::vector<float>{2.0f, 4.0f});
}

TEST_CASE("State rule: state a buffer cannot hold is refused whole, the state unchanged",
          "[server][state][security]") {
  auto plan = ShardingPlan::Create(8, 1, 8, 2);  // chunk 1: a running mean, a running variance
  REQUIRE(plan.ok());
  ServerRules rules = Rules(Algorithm::kDownpour);
  rules.state = StateLayout({{"bn.running_mean", 1, StateKind::kMean},
                             {"bn.running_var", 1, StateKind::kVariance}},
                            /*bound=*/1e6);
  auto server = MakeServer(*plan, 0, {}, rules);
  const std::vector<float> before = Values(*server, 1, 2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<std::vector<float>, std::string>> refused = {
      {{0.5f, -1.0f}, "model state 'bn.running_var' holds -1 at its element 0: a variance is "
                      "finite, at least 0 and within 1e+06 (model.state_bound) (chunk 1 from "
                      "worker 0): refused whole; the servers' state is unchanged"},
      {{3e38f, 1.0f}, "model state 'bn.running_mean' holds 3e+38 at its element 0"},
      {{0.0f, nan}, "model state 'bn.running_var' holds nan at its element 0"}};
  for (const auto& [pushed, message] : refused) {
    const absl::StatusOr<PushResult> result = server->Push(1, 0, 0, pushed);
    REQUIRE(absl::IsInvalidArgument(result.status()));
    CHECK_THAT(std::string(result.status().message()), Catch::StartsWith(message));
    CHECK(Values(*server, 1, 2) == before);
  }
  REQUIRE(server->Push(1, 0, 0, std::vector<float>{0.5f, 2.0f}).ok());
  CHECK(Values(*server, 1, 2) != before);
}

TEST_CASE("Sync: a pull for the next round waits until the round is applied", "[server][sync]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0, {}, Rules(Algorithm::kSync), /*workers=*/2);
  std::atomic<bool> ready{false};
  absl::Status status = absl::UnknownError("not called");
  server->WhenReady(0, {1, 0}, absl::InfiniteFuture(), [&](absl::Status s) {
    status = s;
    ready = true;
  });
  REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 1.0f)).ok());
  CHECK_FALSE(ready);
  REQUIRE(server->Push(0, 1, 0, std::vector<float>(8, 1.0f)).ok());
  CHECK(ready);
  CHECK(status.ok());
  // A wait that cannot be met ends at its deadline, naming what it waited for.
  std::vector<float> w(8);
  auto late = server->Pull(0, absl::MakeSpan(w), {5, 0}, absl::Milliseconds(50));
  REQUIRE(absl::IsDeadlineExceeded(late.status()));
  CHECK(std::string(late.status().message()).find("waited for version 5") != std::string::npos);
}

TEST_CASE("Sync: K of N closes a round with the first K; late gradients drop or fold",
          "[server][sync]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec sgd;
  sgd.learning_rate = 1.0f;
  for (const LateGradients late_rule : {LateGradients::kDrop, LateGradients::kFold}) {
    ServerRules rules = Rules(Algorithm::kSync);
    rules.sync.quorum = 2;
    rules.sync.late_gradients = late_rule;
    auto server = MakeServer(*plan, 0, sgd, rules, /*workers=*/3);
    const auto w0 = Values(*server);
    REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 1.0f)).ok());
    REQUIRE(server->Push(0, 1, 0, std::vector<float>(8, 3.0f))->version == 1);  // mean 2
    // Worker 2's gradient for round 0 arrives after it closed: staleness 1.
    auto late = server->Push(0, 2, 0, std::vector<float>(8, 4.0f));
    REQUIRE(late.ok());
    CHECK(late->staleness == 1);
    CHECK(late->applied == (late_rule == LateGradients::kFold));
    // Round 1: two fresh gradients of 1; a folded late one counts with weight 1/2.
    REQUIRE(server->Push(0, 0, 1, std::vector<float>(8, 1.0f)).ok());
    REQUIRE(server->Push(0, 1, 1, std::vector<float>(8, 1.0f))->version == 2);
    const double round1 = late_rule == LateGradients::kFold ? (1 + 1 + 0.5 * 4) / 2.5 : 1.0;
    const auto w2 = Values(*server);
    for (int i = 0; i < 8; ++i) CHECK(w2[i] == Approx(w0[i] - 2.0 - round1));
  }
}

TEST_CASE("Sync: a worker that finishes no longer holds up the round", "[server][sync]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0, {}, Rules(Algorithm::kSync), /*workers=*/2);
  REQUIRE(server->Push(0, 0, 0, std::vector<float>(8, 1.0f))->version == 0);
  REQUIRE(server->Finish(RoleKind::kWorker, 1).ok());  // worker 1 ran out of data
  std::vector<float> w(8);
  auto pulled = server->Pull(0, absl::MakeSpan(w), {1, 0}, absl::Seconds(5));
  REQUIRE(pulled.ok());
  CHECK(pulled->version == 1);
  // Worker 0 now completes rounds alone.
  CHECK(server->Push(0, 0, 1, std::vector<float>(8, 1.0f))->version == 2);
}

TEST_CASE("SSP: a pull blocks exactly while the slowest live worker is too far behind",
          "[server][ssp]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0, {}, Rules(Algorithm::kSsp), /*workers=*/2);
  const std::vector<float> g(8, 0.0f);
  // Worker 0 pushes 3 times; worker 1 not at all. With bound s = 2, worker 0 may start step
  // c = 3 only when the slowest clock is >= c - s = 1.
  for (int i = 0; i < 3; ++i) REQUIRE(server->Push(0, 0, i, g).ok());
  std::vector<float> w(8);
  CHECK(server->Pull(0, absl::MakeSpan(w), {0, 0}, absl::Milliseconds(1)).ok());  // c = 2: free
  std::atomic<bool> ready{false};
  server->WhenReady(0, {0, 1}, absl::InfiniteFuture(), [&](absl::Status s) { ready = s.ok(); });
  CHECK_FALSE(ready);
  auto pulled = server->Pull(0, absl::MakeSpan(w), {0, 0}, absl::Milliseconds(1));
  REQUIRE(pulled.ok());
  CHECK(pulled->slowest_clock == 0);
  REQUIRE(server->Push(0, 1, 3, g).ok());  // worker 1 reaches clock 1
  CHECK(ready);
  // A finished worker no longer counts as the slowest.
  std::atomic<bool> far{false};
  server->WhenReady(0, {0, 3}, absl::InfiniteFuture(), [&](absl::Status s) { far = s.ok(); });
  CHECK_FALSE(far);
  REQUIRE(server->Finish(RoleKind::kWorker, 1).ok());
  CHECK(far);
}

TEST_CASE("EASGD: the exchange moves worker and centre by the same force; their sum is conserved",
          "[server][easgd]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  ServerRules rules = Rules(Algorithm::kEasgd);
  rules.easgd.alpha = 0.25;
  auto server = MakeServer(*plan, 0, {}, rules);
  const auto centre0 = Values(*server);
  std::vector<float> x(8), d(8);
  for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i) - 3.0f;
  auto result = server->Exchange(0, 1, 0, x, absl::MakeSpan(d));
  REQUIRE(result.ok());
  CHECK(result->version == 1);
  const auto centre1 = Values(*server);
  for (int i = 0; i < 8; ++i) {
    CHECK(d[i] == Approx(0.25 * (x[i] - centre0[i])));               // d = alpha (x - centre)
    CHECK(centre1[i] == Approx(centre0[i] + d[i]));                  // centre += d
    CHECK((x[i] - d[i]) + centre1[i] == Approx(x[i] + centre0[i]));  // sum conserved
  }
  // A gradient push is refused: this job's workers exchange weights.
  CHECK(absl::IsFailedPrecondition(server->Push(0, 0, 0, std::vector<float>(8, 1.0f)).status()));
}

TEST_CASE("EASGD: alpha = beta / live workers, recomputed when a worker finishes",
          "[server][easgd]") {
  EasgdConfig easgd;
  easgd.beta = 0.9;
  CHECK(ElasticAlpha(easgd, 3) == Approx(0.3));
  CHECK(ElasticAlpha(easgd, 1) == Approx(0.9));
  easgd.alpha = 0.05;
  CHECK(ElasticAlpha(easgd, 3) == Approx(0.05));
  CHECK(ElasticAlphaBound(0.0) == Approx(1.0));
  CHECK(ElasticAlphaBound(1.0) == Approx(2.0 / 3.0));

  auto plan = ShardingPlan::Create(8, 1, 8);
  ServerRules rules = Rules(Algorithm::kEamsgd);
  rules.easgd.beta = 1.0;
  auto server = MakeServer(*plan, 0, {}, rules, /*workers=*/2);
  std::vector<float> d(8);
  const auto c0 = Values(*server);
  std::vector<float> x(c0);
  x[0] += 1.0f;
  REQUIRE(server->Exchange(0, 0, 0, x, absl::MakeSpan(d)).ok());
  CHECK(d[0] == Approx(0.5));  // beta / 2
  REQUIRE(server->Finish(RoleKind::kWorker, 1).ok());
  const auto c1 = Values(*server);
  x = c1;
  x[0] += 1.0f;
  REQUIRE(server->Exchange(0, 0, 1, x, absl::MakeSpan(d)).ok());
  CHECK(d[0] == Approx(1.0));  // beta / 1
}

TEST_CASE("ParameterServer: shutting down ends every waiting pull", "[server]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0, {}, Rules(Algorithm::kSync));
  absl::Status status;
  server->WhenReady(0, {3, 0}, absl::InfiniteFuture(), [&](absl::Status s) { status = s; });
  server->CancelWaiters();
  CHECK(absl::IsCancelled(status));
  server->WhenReady(0, {3, 0}, absl::InfiniteFuture(), [&](absl::Status s) { status = s; });
  CHECK(absl::IsCancelled(status));
}

}  // namespace
}  // namespace monsoon

namespace monsoon {
namespace {

PushOrigin Origin(uint64_t sequence, int64_t step) {
  PushOrigin origin;
  origin.sequence = sequence;
  origin.position = {step, 0, static_cast<uint64_t>(step) * 10};
  return origin;
}

TEST_CASE("ParameterServer: a checkpoint restores weights, optimizer state, clocks and the ledger",
          "[server][checkpoint]") {
  auto plan = ShardingPlan::Create(8, 1, 4);  // two chunks on one server
  REQUIRE(plan.ok());
  OptimizerSpec opt;
  opt.type = OptimizerType::kAdam;
  opt.learning_rate = 0.1f;
  auto original = MakeServer(*plan, 0, opt);
  for (uint64_t k = 1; k <= 3; ++k) {
    REQUIRE(original->Push(0, 0, k - 1, std::vector<float>(4, 1.0f), Origin(k, 2 * k)).ok());
  }
  REQUIRE(original->Push(1, 0, 0, std::vector<float>(4, -1.0f), Origin(1, 2)).ok());
  REQUIRE(original->Push(0, 1, 3, std::vector<float>(4, 0.5f), Origin(1, 7)).ok());
  const std::string dir = WriteCheckpoint(*original, "server_checkpoint", 2);
  auto restored = MakeServer(*plan, 0, opt);
  std::vector<std::string> skipped;
  auto in = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(in.ok());
  REQUIRE(restored->LoadCheckpoint(in->get()).ok());
  CHECK(Values(*restored, 0, 4) == Values(*original, 0, 4));
  CHECK(Values(*restored, 1, 4) == Values(*original, 1, 4));
  // Worker 0 has pushes 1-3 on chunk 0 but only push 1 on chunk 1: it resumes after push 1.
  const ResumePoint resume = restored->ResumePointOf(0);
  CHECK(resume.sequence == 1);
  CHECK(resume.position.step == 2);
  CHECK(resume.position.cursor == 20);
  // Its replay of push 2 and 3 is a duplicate for chunk 0 and new for chunk 1.
  auto replay = restored->Push(0, 0, 3, std::vector<float>(4, 1.0f), Origin(2, 4));
  REQUIRE(replay.ok());
  CHECK(replay->duplicate);
  CHECK(!restored->Push(1, 0, 1, std::vector<float>(4, -1.0f), Origin(2, 4))->duplicate);
  // The next update continues the optimizer exactly as the original would.
  REQUIRE(original->Push(0, 1, 4, std::vector<float>(4, 0.25f), Origin(2, 9)).ok());
  REQUIRE(restored->Push(0, 1, 4, std::vector<float>(4, 0.25f), Origin(2, 9)).ok());
  CHECK(Values(*restored, 0, 4) == Values(*original, 0, 4));
  const std::vector<LedgerEntry> ledger = restored->Ledger();
  REQUIRE(ledger.size() == 4);  // 2 chunks x 2 workers
  CHECK(ledger[0].applied == 3);
  CHECK(ledger[0].sequence_sum == 6);
  CHECK(ledger[0].duplicates == 1);
  // A checkpoint of another layout is refused.
  auto other_plan = ShardingPlan::Create(8, 1, 8);
  auto other = MakeServer(*other_plan, 0, opt);
  auto again = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(again.ok());
  CHECK(absl::IsFailedPrecondition(other->LoadCheckpoint(again->get())));
  // So is one of another run with the same layout.
  ServerRules another_run;
  another_run.run_id = 0x1234;
  auto stranger = MakeServer(*plan, 0, opt, another_run);
  auto once_more = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(once_more.ok());
  const absl::Status refused = stranger->LoadCheckpoint(once_more->get());
  CHECK(absl::IsFailedPrecondition(refused));
  CHECK(std::string(refused.message())
            .find("belongs to another run (run id 0000000000000000; "
                  "this run is 0000000000001234)") != std::string::npos);
}

TEST_CASE("ParameterServer: a resumed server continues with the model state it checkpointed",
          "[server][checkpoint][state]") {
  auto plan = ShardingPlan::Create(8, 1, 8, 2);  // chunk 1: the last 2 floats, state
  REQUIRE(plan.ok());
  auto original = MakeServer(*plan, 0);
  REQUIRE(original->Push(1, 0, 0, std::vector<float>{4.0f, 9.0f}, Origin(1, 1)).ok());
  const std::string dir = WriteCheckpoint(*original, "state_checkpoint", 1);
  auto restored = MakeServer(*plan, 0);
  std::vector<std::string> skipped;
  auto in = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(in.ok());
  REQUIRE(restored->LoadCheckpoint(in->get()).ok());
  CHECK(Values(*restored, 1, 2) == Values(*original, 1, 2));
  CHECK(Values(*restored, 1, 2) != std::vector<float>{0.0f, 0.0f});
  for (auto* server : {original.get(), restored.get()}) {
    REQUIRE(server->Push(1, 1, 1, std::vector<float>{2.0f, 1.0f}, Origin(1, 1)).ok());
  }
  CHECK(Values(*restored, 1, 2) == Values(*original, 1, 2));
}

TEST_CASE("ParameterServer: after a checkpoint's load the join timeout starts again",
          "[server][checkpoint][reliability]") {
  auto plan = ShardingPlan::Create(8, 1, 4);
  REQUIRE(plan.ok());
  ServerRules rules;
  rules.join_timeout = absl::Milliseconds(1500);
  const ManualClock clock;
  const std::string dir = WriteCheckpoint(*MakeServer(*plan, 0, {}, rules), "join_checkpoint", 1);
  ParameterServer restored(0, *plan, ModelInitialValues(TinyModel(), /*seed=*/5), rules,
                           /*workers=*/2,
                           /*evaluator=*/true, clock,
                         ServerTicks::kByOwner);
  clock.Advance(absl::Milliseconds(1400));  // a slow load, say
  std::vector<std::string> skipped;
  auto in = OpenNewestCheckpoint(dir, &skipped);
  REQUIRE(in.ok());
  REQUIRE(restored.LoadCheckpoint(in->get()).ok());
  clock.Advance(absl::Milliseconds(600));  // 2 s since construction, 0.6 s since the load
  restored.Tick(clock.Now());
  CHECK(restored.Stats().workers_lost.empty());
  clock.Advance(absl::Milliseconds(1400));
  restored.Tick(clock.Now());
  CHECK(restored.Stats().workers_lost == std::vector<int>{0, 1});
}

}  // namespace
}  // namespace monsoon
