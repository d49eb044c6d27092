#include "core/optimizer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

namespace monsoon {
namespace {

TEST_CASE("SgdOptimizer: w <- w - eta g", "[core][optimizer]") {
  SgdOptimizer sgd(0.5f, 0.0f);
  std::vector<float> w = {1.0f, -2.0f};
  const std::vector<float> g = {0.2f, -0.4f};
  sgd.Apply(absl::MakeSpan(w), g, {}, 1, 1.0f);
  CHECK(w[0] == Approx(0.9));
  CHECK(w[1] == Approx(-1.8));
}

TEST_CASE("Weight decay: every optimizer steps on g + wd w", "[core][optimizer]") {
  // With a zero gradient only the decay moves the weights, as g = wd * w would.
  const std::vector<float> zero = {0.0f};
  const float wd = 0.1f;
  std::vector<float> w = {2.0f};
  SgdOptimizer(0.5f, wd).Apply(absl::MakeSpan(w), zero, {}, 1, 1.0f);
  CHECK(w[0] == Approx(2.0 - 0.5 * 0.1 * 2.0));
  w = {2.0f};
  std::vector<float> v = {0.0f};
  MomentumOptimizer(0.5f, 0.9f, wd).Apply(absl::MakeSpan(w), zero, absl::MakeSpan(v), 1, 1.0f);
  CHECK(v[0] == Approx(0.2));
  CHECK(w[0] == Approx(2.0 - 0.5 * 0.2));
  // Adagrad and Adam on a decayed zero gradient take the same step as on g = wd * w.
  for (OptimizerType type : {OptimizerType::kAdagrad, OptimizerType::kAdam}) {
    OptimizerSpec spec;
    spec.type = type;
    spec.learning_rate = 0.5f;
    const auto plain = Optimizer::Create(spec);
    spec.weight_decay = wd;
    const auto decayed = Optimizer::Create(spec);
    std::vector<float> a = {2.0f}, b = {2.0f};
    std::vector<float> sa(plain->state_per_param(), plain->initial_state()), sb = sa;
    plain->Apply(absl::MakeSpan(a), std::vector<float>{wd * 2.0f}, absl::MakeSpan(sa), 1, 1.0f);
    decayed->Apply(absl::MakeSpan(b), zero, absl::MakeSpan(sb), 1, 1.0f);
    INFO(kOptimizerNames.Name(type));
    CHECK(b[0] == Approx(a[0]));
    CHECK(b[0] < 2.0f);
  }
}

TEST_CASE("LearningRatePlan: a linear warm-up from 0, then the schedule", "[core][optimizer]") {
  const LearningRatePlan warm{LearningRateSchedule::kConstant, 12, 0.5};
  CHECK(warm.Scale(0) == 0.0f);
  CHECK(warm.Scale(0.25) == Approx(0.5));
  CHECK(warm.Scale(0.5) == 1.0f);
  CHECK(warm.Scale(7) == 1.0f);
  const LearningRatePlan warm_cosine{LearningRateSchedule::kCosine, 12, 2};
  CHECK(warm_cosine.Scale(1) == Approx(0.5 * 0.5 * (1 + std::cos(M_PI / 12))));
  CHECK(warm_cosine.Scale(6) == Approx(0.5));
}

TEST_CASE("MomentumOptimizer: v <- mu v + g; w <- w - eta v over two steps", "[core][optimizer]") {
  MomentumOptimizer m(0.1f, 0.9f, 0.0f);
  std::vector<float> w = {1.0f}, v = {0.0f};
  m.Apply(absl::MakeSpan(w), std::vector<float>{2.0f}, absl::MakeSpan(v), 1, 1.0f);
  CHECK(v[0] == Approx(2.0));
  CHECK(w[0] == Approx(0.8));
  m.Apply(absl::MakeSpan(w), std::vector<float>{1.0f}, absl::MakeSpan(v), 2, 1.0f);
  CHECK(v[0] == Approx(0.9 * 2.0 + 1.0));
  CHECK(w[0] == Approx(0.8 - 0.1 * 2.8));
}

TEST_CASE("AdagradOptimizer: per-coordinate step gamma / sqrt(sum g^2)", "[core][optimizer]") {
  AdagradOptimizer a(0.5f, 1e-8f, 0.0f, 0.0f);
  std::vector<float> w = {0.0f, 0.0f}, acc = {0.0f, 0.0f};
  a.Apply(absl::MakeSpan(w), std::vector<float>{3.0f, -4.0f}, absl::MakeSpan(acc), 1, 1.0f);
  // First step: |g| / sqrt(g^2) = 1, so each coordinate moves by gamma against its sign.
  CHECK(w[0] == Approx(-0.5));
  CHECK(w[1] == Approx(0.5));
  a.Apply(absl::MakeSpan(w), std::vector<float>{4.0f, 0.0f}, absl::MakeSpan(acc), 2, 1.0f);
  CHECK(acc[0] == Approx(25.0));
  CHECK(w[0] == Approx(-0.5 - 0.5 * 4.0 / 5.0));
  CHECK(w[1] == Approx(0.5));  // a zero gradient leaves the coordinate alone
}

TEST_CASE("AdamOptimizer: bias-corrected moments over two steps", "[core][optimizer]") {
  AdamOptimizer adam(0.1f, 0.9f, 0.999f, 1e-8f, 0.0f);
  std::vector<float> w = {1.0f}, state = {0.0f, 0.0f};  // m, v
  // Step 1: m = 0.1 g, v = 0.001 g^2; the corrected ratio is g / |g| = 1.
  adam.Apply(absl::MakeSpan(w), std::vector<float>{2.0f}, absl::MakeSpan(state), 1, 1.0f);
  CHECK(state[0] == Approx(0.2));
  CHECK(state[1] == Approx(0.004).epsilon(1e-4));
  CHECK(w[0] == Approx(0.9));
  // Step 2 with g = 1: m = 0.9*0.2 + 0.1 = 0.28, v = 0.999*0.004 + 0.001 = 0.004996.
  adam.Apply(absl::MakeSpan(w), std::vector<float>{1.0f}, absl::MakeSpan(state), 2, 1.0f);
  CHECK(state[0] == Approx(0.28));
  CHECK(state[1] == Approx(0.004996).epsilon(1e-4));
  const double m_hat = 0.28 / (1 - 0.81), v_hat = 0.004996 / (1 - 0.998001);
  CHECK(w[0] == Approx(0.9 - 0.1 * m_hat / std::sqrt(v_hat)));
}

TEST_CASE("rate_scale scales the step, not the optimizer's state", "[core][optimizer]") {
  MomentumOptimizer m(0.1f, 0.9f, 0.0f);
  std::vector<float> w = {1.0f}, v = {0.0f};
  m.Apply(absl::MakeSpan(w), std::vector<float>{2.0f}, absl::MakeSpan(v), 1, 0.5f);
  CHECK(v[0] == Approx(2.0));
  CHECK(w[0] == Approx(1.0 - 0.5 * 0.1 * 2.0));
  AdamOptimizer adam(0.1f, 0.9f, 0.999f, 1e-8f, 0.0f);
  std::vector<float> a = {1.0f}, state = {0.0f, 0.0f};
  adam.Apply(absl::MakeSpan(a), std::vector<float>{2.0f}, absl::MakeSpan(state), 1, 0.0f);
  CHECK(a[0] == 1.0f);
  CHECK(state[0] == Approx(0.2));
}

TEST_CASE("LearningRatePlan: constant keeps the rate, cosine anneals it to 0 at the last epoch",
          "[core][optimizer]") {
  const LearningRatePlan constant{LearningRateSchedule::kConstant, 12, 0};
  const LearningRatePlan cosine{LearningRateSchedule::kCosine, 12, 0};
  CHECK(constant.Scale(0) == 1.0f);
  CHECK(constant.Scale(30) == 1.0f);
  CHECK(cosine.Scale(0) == Approx(1.0));
  CHECK(cosine.Scale(3) == Approx(0.5 * (1 + std::cos(M_PI / 4))));
  CHECK(cosine.Scale(6) == Approx(0.5));
  CHECK(cosine.Scale(12) == Approx(0.0).margin(1e-7));
  CHECK(cosine.Scale(13) == Approx(0.0).margin(1e-7));
  float previous = 2;
  for (double e = 0; e <= 12; e += 0.25) {
    CHECK(cosine.Scale(e) < previous);
    previous = cosine.Scale(e);
  }
  CHECK(kScheduleNames.Parse("cosine").value() == LearningRateSchedule::kCosine);
  CHECK(kScheduleNames.Parse("constant").value() == LearningRateSchedule::kConstant);
  CHECK(std::string(kScheduleNames.Parse("linear").status().message()) ==
        "unknown learning-rate schedule 'linear' (allowed: constant, cosine)");
}

TEST_CASE("Optimizer::Create honours the spec and ParseOptimizerType names the choices",
          "[core][optimizer]") {
  OptimizerSpec spec;
  spec.type = OptimizerType::kAdagrad;
  spec.initial_accumulator = 0.1f;
  auto opt = Optimizer::Create(spec);
  CHECK(opt->state_per_param() == 1);
  CHECK(opt->initial_state() == Approx(0.1));
  spec.type = OptimizerType::kAdam;
  CHECK(Optimizer::Create(spec)->state_per_param() == 2);
  auto bad = kOptimizerNames.Parse("rmsprop");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("sgd, momentum, adagrad, adam") !=
        std::string::npos);
}

}  // namespace
}  // namespace monsoon
