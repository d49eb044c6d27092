#include "core/compute/cpu/cpu_backend.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "tests/layer_specs.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

TEST_CASE("CpuBackend: Gemm matches a naive product for every transpose combination",
          "[core][backend]") {
  CpuBackend backend;
  const int m = 5, n = 7, k = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const auto a = Random(m * k, 1), b = Random(k * n, 2);
      std::vector<float> c(m * n, 1.0f), expected(m * n);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double sum = 0;
          for (int p = 0; p < k; ++p) {
            const float av = ta ? a[p * m + i] : a[i * k + p];
            const float bv = tb ? b[j * k + p] : b[p * n + j];
            sum += av * bv;
          }
          expected[i * n + j] = static_cast<float>(2.0 * sum + 0.5 * 1.0);
        }
      }
      backend.Gemm(ta, tb, m, n, k, 2.0f, a.data(), b.data(), 0.5f, c.data());
      for (int i = 0; i < m * n; ++i) CHECK(c[i] == Approx(expected[i]).margin(1e-5));
    }
  }
}

TEST_CASE("LossResult: the floats a loss method writes keep a double's sum", "[core][backend]") {
  for (const double sum : {0.0, 1234.5678901234567, 3e-9, 7.25e6}) {
    float written[kLossFloats];
    WriteLoss(sum, 17, written);
    const LossResult r = LossResult::Read(written);
    CHECK(std::abs(r.loss_sum - sum) <= 1e-12 * std::max(1.0, sum));
    CHECK(r.correct == 17);
  }
}

TEST_CASE("CpuBackend: softmax cross-entropy loss, accuracy and gradient", "[core][backend]") {
  CpuBackend backend;
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f};
  const std::vector<float> labels = {2.0f, 1.0f};
  std::vector<float> grad(6), loss(kLossFloats);
  backend.SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 3, grad.data(), loss.data());
  const LossResult r = LossResult::Read(loss.data());
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double expected = -std::log(std::exp(3.0) / z) - std::log(1.0 / 3.0);
  CHECK(r.loss_sum == Approx(expected));
  CHECK(r.correct == 1);  // row 0 argmax 2 is right; row 1 is a tie resolved to class 0
  CHECK(grad[2] == Approx((std::exp(3.0) / z - 1.0) / 2.0));
  CHECK(grad[3] == Approx((1.0 / 3.0) / 2.0));
  CHECK(grad[4] == Approx((1.0 / 3.0 - 1.0) / 2.0));
}

TEST_CASE("CpuBackend: activations and their derivatives", "[core][backend]") {
  CpuBackend backend;
  const std::vector<float> x = {-2.0f, -0.5f, 0.0f, 0.7f, 3.0f};
  const std::vector<float> dy = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  std::vector<float> y(5), dx(5);
  const auto run = [&](ActivationFn f) {
    backend.ActivationForward(f, x.data(), y.data(), 5);
    backend.ActivationBackward(f, x.data(), y.data(), dy.data(), dx.data(), 5);
  };
  run({Activation::kTanh});
  for (int i = 0; i < 5; ++i) {
    CHECK(y[i] == Approx(std::tanh(x[i])));
    CHECK(dx[i] == Approx(dy[i] * (1 - std::tanh(x[i]) * std::tanh(x[i]))));
  }
  run({Activation::kSigmoid});
  for (int i = 0; i < 5; ++i) {
    const double s = 1 / (1 + std::exp(-x[i]));
    CHECK(y[i] == Approx(s));
    CHECK(dx[i] == Approx(dy[i] * s * (1 - s)));
  }
  run({Activation::kRelu});
  CHECK(y == std::vector<float>{0, 0, 0, 0.7f, 3.0f});
  CHECK(dx == std::vector<float>{0, 0, 0, 4.0f, 5.0f});
  run({Activation::kLeakyRelu, 0.1f});
  CHECK(y == std::vector<float>{-0.2f, -0.05f, 0, 0.7f, 3.0f});
  CHECK(dx == std::vector<float>{0.1f, 0.2f, 0.3f, 4.0f, 5.0f});

  run({Activation::kSilu});
  for (int i = 0; i < 5; ++i) {
    const double s = 1 / (1 + std::exp(-x[i]));
    CHECK(y[i] == Approx(x[i] * s));
    CHECK(dx[i] == Approx(dy[i] * s * (1 + x[i] * (1 - s))));
  }
  // GELU against PyTorch 1.13's F.gelu at -2, -0.5, 0, 0.7 and 3, exact and tanh-approximated.
  run({Activation::kGelu});
  const std::vector<double> gelu = {-0.0455003, -0.1542688, 0.0, 0.5306254, 2.9959503};
  for (int i = 0; i < 5; ++i) CHECK(y[i] == Approx(gelu[i]).margin(1e-6));
  run({Activation::kGeluTanh});
  const std::vector<double> gelu_tanh = {-0.0454023, -0.1542860, 0.0, 0.5305701, 2.9963626};
  for (int i = 0; i < 5; ++i) CHECK(y[i] == Approx(gelu_tanh[i]).margin(1e-6));

  SECTION("ReLU's derivative over a long run of mixed signs, in place, without its input") {
    const size_t n = 37;  // vector lanes and a tail
    std::vector<float> out(n), grad(n);
    for (size_t i = 0; i < n; ++i) {
      out[i] = (i * 7) % 3 == 0 ? 0.0f : 0.5f * static_cast<float>(i);
      grad[i] = static_cast<float>(i) + 1;
    }
    backend.ActivationBackward({Activation::kRelu}, nullptr, out.data(), grad.data(), grad.data(),
                               n);
    for (size_t i = 0; i < n; ++i) {
      CHECK(grad[i] == (out[i] > 0 ? static_cast<float>(i) + 1 : 0.0f));
    }
  }
}

TEST_CASE("CpuBackend: every activation's derivative is its central finite difference",
          "[core][backend]") {
  CpuBackend backend;
  // Away from kinks (0), where a finite difference straddles two slopes.
  const std::vector<float> x = {-4.0f, -2.1f, -1.3f, -0.4f, -0.05f, 0.2f, 0.9f, 2.5f, 4.0f};
  const size_t n = x.size();
  const float h = 1e-2f;
  std::vector<float> up(n), down(n), y(n), dx(n);
  const std::vector<float> ones(n, 1.0f);
  std::vector<float> x_up = x, x_down = x;
  for (size_t i = 0; i < n; ++i) x_up[i] += h, x_down[i] -= h;
  for (const Activation kind : kAllActivations) {
    const ActivationFn f{kind, kind == Activation::kLeakyRelu ? 0.3f : 0.0f};
    INFO(ActivationName(kind));
    backend.ActivationForward(f, x_up.data(), up.data(), n);
    backend.ActivationForward(f, x_down.data(), down.data(), n);
    backend.ActivationForward(f, x.data(), y.data(), n);
    backend.ActivationBackward(f, x.data(), y.data(), ones.data(), dx.data(), n);
    for (size_t i = 0; i < n; ++i) {
      INFO("x = " << x[i]);
      CHECK(dx[i] == Approx((up[i] - down[i]) / (2 * h)).margin(2e-3));
    }
  }
}

TEST_CASE("CpuBackend: bias add, column sum, MSE and axpy", "[core][backend]") {
  CpuBackend backend;
  std::vector<float> x = {1, 2, 3, 4, 5, 6};  // 2 x 3
  const std::vector<float> bias = {10, 20, 30};
  backend.AddBias(bias.data(), 2, 3, x.data());
  CHECK(x == std::vector<float>{11, 22, 33, 14, 25, 36});
  std::vector<float> sums(3);
  backend.ColumnSum(x.data(), 2, 3, sums.data());
  CHECK(sums == std::vector<float>{25, 47, 69});
  const std::vector<float> pred = {1, 3}, target = {2, 1};
  std::vector<float> grad(2), loss(kLossFloats);
  backend.MeanSquaredError(pred.data(), target.data(), 2, 1, grad.data(), loss.data());
  const LossResult r = LossResult::Read(loss.data());
  CHECK(r.loss_sum == Approx(0.5 * (1 + 4)));
  CHECK(grad == std::vector<float>{-0.5f, 1.0f});
  std::vector<float> y = {1, 1};
  backend.Axpy(-2.0f, grad.data(), y.data(), 2);
  CHECK(y == std::vector<float>{2.0f, -1.0f});
}

TEST_CASE("CpuBackend: NesterovStep is EAMSGD's momentum step in look-ahead form",
          "[core][backend]") {
  // Reference on f(x) = x^2 / 2 (gradient = the point itself):
  //   v <- delta v - eta g(x + delta v);  x <- x + v.
  // The backend keeps w = x + delta v and takes the gradient at w.
  const float eta = 0.1f, delta = 0.9f;
  double x = 1.0, v_ref = 0.0;
  std::vector<float> w = {1.0f}, v = {0.0f}, g(1);
  CpuBackend cpu;
  for (int step = 0; step < 5; ++step) {
    const double y = x + delta * v_ref;
    v_ref = delta * v_ref - eta * y;
    x += v_ref;
    g[0] = w[0];
    cpu.NesterovStep(eta, delta, g.data(), v.data(), w.data(), 1);
    CHECK(v[0] == Approx(v_ref));
    CHECK(w[0] == Approx(x + delta * v_ref));
  }
}

}  // namespace
}  // namespace monsoon

namespace monsoon {
namespace {

TEST_CASE("CpuBackend: a same and a valid convolution of one shape keep their own primitives",
          "[core][backend][conv]") {
  // 1x5x7 input, 4 filters, kernel 2, stride 2: `same` gives 4x3x4, `valid` 4x2x3, both
  // unpadded above and to the left, so only the output size tells them apart.
  const Shape in = {1, 5, 7};
  const Conv2dGeometry same = ConvGeometryOf(Conv(4, 2, 2, Padding::kSame), in);
  const Conv2dGeometry valid = ConvGeometryOf(Conv(4, 2, 2, Padding::kValid), in);
  REQUIRE(same.pad_top == valid.pad_top);
  REQUIRE(same.pad_left == valid.pad_left);
  const int batch = 3;
  const std::vector<float> x = Random(batch * 35, 1), w = Random(4 * 4, 2), b = Random(4, 3);
  const size_t valid_floats = static_cast<size_t>(batch) * 4 * 2 * 3;  // 72
  std::vector<float> want(valid_floats);
  CpuBackend().Conv2dForward(valid, x.data(), w.data(), b.data(), batch, want.data());

  CpuBackend backend;
  std::vector<float> same_y(static_cast<size_t>(batch) * 4 * 3 * 4);
  backend.Conv2dForward(same, x.data(), w.data(), b.data(), batch, same_y.data());
  // The valid output, followed by guard values that no write may touch.
  std::vector<float> y(valid_floats + 128, -7.0f);
  backend.Conv2dForward(valid, x.data(), w.data(), b.data(), batch, y.data());
  for (size_t i = valid_floats; i < y.size(); ++i) REQUIRE(y[i] == -7.0f);
  for (size_t i = 0; i < valid_floats; ++i) CHECK(y[i] == Approx(want[i]).margin(1e-5));
}

}  // namespace
}  // namespace monsoon
