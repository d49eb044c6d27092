#include "server/parameter_server.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

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
                                            OptimizerSpec opt = {}) {
  return std::make_unique<ParameterServer>(index, plan, TinyModel(), /*seed=*/5,
                                           std::make_unique<DownpourRule>(opt),
                                           /*workers=*/2, /*evaluator=*/true);
}

TEST_CASE("ParameterServer: holds its chunks at the model's initial values", "[server][downpour]") {
  auto plan = ShardingPlan::Create(8, 2, 3);  // chunks of 3, 3, 2 -> server 0: {0, 2}
  REQUIRE(plan.ok());
  auto server = MakeServer(*plan, 0);
  std::vector<float> expected(8);
  Model::InitialValues(TinyModel(), 5, 0, absl::MakeSpan(expected));
  std::vector<float> chunk(2);
  auto version = server->Pull(2, absl::MakeSpan(chunk));
  REQUIRE(version.ok());
  CHECK(*version == 0);
  CHECK(chunk[0] == expected[6]);
  CHECK(absl::IsNotFound(server->Pull(1, absl::MakeSpan(chunk)).status()));
}

TEST_CASE("DownpourRule: each push is applied at once by the server optimizer",
          "[server][downpour]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  OptimizerSpec opt;
  opt.type = OptimizerType::kMomentum;
  opt.learning_rate = 0.1f;
  opt.momentum = 0.5f;
  auto server = MakeServer(*plan, 0, opt);
  std::vector<float> w0(8), w(8);
  REQUIRE(server->Pull(0, absl::MakeSpan(w0)).ok());
  const std::vector<float> g1(8, 1.0f), g2(8, -2.0f);
  CHECK(*server->Push(0, 0, 0, g1) == 1);
  CHECK(*server->Push(0, 1, 0, g2) == 2);
  REQUIRE(server->Pull(0, absl::MakeSpan(w)).ok());
  // v1 = 1, w1 = w0 - 0.1; v2 = 0.5 - 2 = -1.5, w2 = w1 + 0.15.
  for (int i = 0; i < 8; ++i) CHECK(w[i] == Approx(w0[i] - 0.1 + 0.15));
  CHECK(server->Stats().pushes_applied == 2);
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
  REQUIRE(server->Pull(0, absl::MakeSpan(after)).ok());
  CHECK(after == before);
  CHECK(server->Stats().pushes_rejected == 5);
  CHECK(server->Stats().pushes_applied == 0);
}

TEST_CASE("ParameterServer: finishes once every worker and the evaluator are done", "[server]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto server = MakeServer(*plan, 0);
  CHECK_FALSE(server->AllFinished());
  REQUIRE(server->Finish(ClientRole::kWorker, 0).ok());
  REQUIRE(server->Finish(ClientRole::kWorker, 1).ok());
  CHECK_FALSE(server->WaitAllFinished(absl::Milliseconds(10)));
  CHECK(server->Stats().workers_finished == 2);
  REQUIRE(server->Finish(ClientRole::kEvaluator, 0).ok());
  CHECK(server->WaitAllFinished(absl::Milliseconds(10)));
  CHECK(absl::IsInvalidArgument(server->Finish(ClientRole::kWorker, 2)));
}

TEST_CASE("ParameterServer: a client with another layout is refused", "[server]") {
  auto plan = ShardingPlan::Create(8, 1, 8);
  auto other = ShardingPlan::Create(9, 1, 8);
  auto server = MakeServer(*plan, 0);
  CHECK(server->Hello(plan->fingerprint()).ok());
  CHECK(absl::IsFailedPrecondition(server->Hello(other->fingerprint())));
}

}  // namespace
}  // namespace monsoon
