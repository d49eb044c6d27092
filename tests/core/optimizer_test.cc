#include "core/optimizer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

namespace monsoon {
namespace {

TEST_CASE("SgdOptimizer: w <- w - eta g", "[core][optimizer]") {
  SgdOptimizer sgd(0.5f);
  std::vector<float> w = {1.0f, -2.0f};
  const std::vector<float> g = {0.2f, -0.4f};
  sgd.Apply(absl::MakeSpan(w), g, {});
  CHECK(w[0] == Approx(0.9));
  CHECK(w[1] == Approx(-1.8));
}

TEST_CASE("MomentumOptimizer: v <- mu v + g; w <- w - eta v over two steps", "[core][optimizer]") {
  MomentumOptimizer m(0.1f, 0.9f);
  std::vector<float> w = {1.0f}, v = {0.0f};
  m.Apply(absl::MakeSpan(w), std::vector<float>{2.0f}, absl::MakeSpan(v));
  CHECK(v[0] == Approx(2.0));
  CHECK(w[0] == Approx(0.8));
  m.Apply(absl::MakeSpan(w), std::vector<float>{1.0f}, absl::MakeSpan(v));
  CHECK(v[0] == Approx(0.9 * 2.0 + 1.0));
  CHECK(w[0] == Approx(0.8 - 0.1 * 2.8));
}

TEST_CASE("AdagradOptimizer: per-coordinate step gamma / sqrt(sum g^2)", "[core][optimizer]") {
  AdagradOptimizer a(0.5f, 1e-8f, 0.0f);
  std::vector<float> w = {0.0f, 0.0f}, acc = {0.0f, 0.0f};
  a.Apply(absl::MakeSpan(w), std::vector<float>{3.0f, -4.0f}, absl::MakeSpan(acc));
  // First step: |g| / sqrt(g^2) = 1, so each coordinate moves by gamma against its sign.
  CHECK(w[0] == Approx(-0.5));
  CHECK(w[1] == Approx(0.5));
  a.Apply(absl::MakeSpan(w), std::vector<float>{4.0f, 0.0f}, absl::MakeSpan(acc));
  CHECK(acc[0] == Approx(25.0));
  CHECK(w[0] == Approx(-0.5 - 0.5 * 4.0 / 5.0));
  CHECK(w[1] == Approx(0.5));  // a zero gradient leaves the coordinate alone
}

TEST_CASE("Optimizer::Create honours the spec and ParseOptimizerType names the choices",
          "[core][optimizer]") {
  OptimizerSpec spec;
  spec.type = OptimizerType::kAdagrad;
  spec.initial_accumulator = 0.1f;
  auto opt = Optimizer::Create(spec);
  CHECK(opt->state_per_param() == 1);
  CHECK(opt->initial_state() == Approx(0.1));
  auto bad = ParseOptimizerType("adam");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("sgd, momentum, adagrad") != std::string::npos);
}

}  // namespace
}  // namespace monsoon
