#include "core/compression.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace monsoon {
namespace {

TEST_CASE("fp16: exact values, rounding to nearest even, saturation, NaN and infinity",
          "[core][compression]") {
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
  CHECK(FloatToHalf(0.0f) == 0x0000);
  CHECK(FloatToHalf(65504.0f) == 0x7bff);
  CHECK(FloatToHalf(1e6f) == 0x7bff);  // saturates instead of overflowing
  CHECK(FloatToHalf(-1e6f) == 0xfbff);
  CHECK(FloatToHalf(std::ldexp(1.0f, -24)) == 0x0001);  // the smallest subnormal
  CHECK(FloatToHalf(std::ldexp(1.0f, -26)) == 0x0000);  // below half of it: zero
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to even (1).
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(HalfToFloat(FloatToHalf(std::numeric_limits<float>::infinity()))));
  // Round trip: within half a unit in the last place of a half (2^-11 relative).
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-100, 100);
  for (int i = 0; i < 10000; ++i) {
    const float x = u(rng);
    const float y = HalfToFloat(FloatToHalf(x));
    REQUIRE(std::fabs(y - x) <= std::fabs(x) * std::ldexp(1.0f, -11) + std::ldexp(1.0f, -25));
  }
  // The vector conversions (F16C instructions where the CPU has them) agree bit for bit.
  std::vector<float> many(4096);
  for (size_t i = 0; i < many.size(); ++i)
    many[i] = std::ldexp(u(rng), static_cast<int>(i % 40) - 30);
  many[0] = 7e4f;
  many[1] = -std::numeric_limits<float>::infinity();
  std::vector<uint16_t> vec(many.size());
  FloatsToHalves(many, vec.data());
  for (size_t i = 0; i < many.size(); ++i) REQUIRE(vec[i] == FloatToHalf(many[i]));
  CHECK(vec[0] == 0x7bff);
  CHECK(vec[1] == 0xfc00);
  std::vector<float> in = {0.5f, -3.25f, 1024.0f}, out(3);
  std::vector<uint16_t> halves(3);
  FloatsToHalves(in, halves.data());
  HalvesToFloats(halves.data(), absl::MakeSpan(out));
  CHECK(out == in);  // all exactly representable
}

TEST_CASE("TopKSparsifier: keeps the k largest per chunk and carries the rest over",
          "[core][compression]") {
  auto plan = ShardingPlan::Create(8, 1, 4);  // two chunks of 4
  TopKSparsifier topk(*plan, 0.5);            // 2 of each 4
  std::vector<float> g = {1, -5, 2, 0.5f, /**/ 3, 3, -4, 1};
  topk.Sparsify(absl::MakeSpan(g));
  CHECK(g == std::vector<float>{0, -5, 2, 0, /**/ 3, 0, -4, 0});  // tie 3/3: the lower index
  CHECK(topk.residual() == std::vector<float>{1, 0, 0, 0.5f, /**/ 0, 3, 0, 1});
  // Error feedback: what was held back joins the next gradient.
  std::vector<float> next(8, 0.0f);
  topk.Sparsify(absl::MakeSpan(next));
  CHECK(next == std::vector<float>{1, 0, 0, 0.5f, /**/ 0, 3, 0, 1});
  CHECK(topk.residual() == std::vector<float>(8, 0.0f));
}

TEST_CASE("TopKSparsifier: over many pushes nothing is lost (sent + residual = total)",
          "[core][compression]") {
  auto plan = ShardingPlan::Create(1000, 2, 300);
  TopKSparsifier topk(*plan, 0.05);
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0, 1);
  std::vector<double> total(1000, 0), sent(1000, 0);
  for (int step = 0; step < 50; ++step) {
    std::vector<float> g(1000);
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = n(rng);
      total[i] += g[i];
    }
    topk.Sparsify(absl::MakeSpan(g));
    size_t nonzero = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      sent[i] += g[i];
      nonzero += g[i] != 0.0f;
    }
    REQUIRE(nonzero == 4 * 13);  // 4 equal chunks of 250: ceil(5 % of 250) = 13 each
  }
  for (size_t i = 0; i < total.size(); ++i) {
    REQUIRE(sent[i] + topk.residual()[i] == Approx(total[i]).margin(1e-3));
  }
}

}  // namespace
}  // namespace monsoon
