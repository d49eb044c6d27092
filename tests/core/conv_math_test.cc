// The CUDA backend's convolution and pooling, emulated on the host: its scheme (batch-wide
// im2col, one product per GEMM, regrouping; core/compute/conv_math.h) run with the same per-element
// functions its kernels call, against the CPU backend (oneDNN, and its straight-line 2x2 max
// pooling; the CPU runs other pooling windows through the same functions, whose gradients
// model_test checks against finite differences). This checks the GPU path's index math on
// every CI run, without a GPU.
#include "core/compute/conv_math.h"

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/compute/cpu/cpu_backend.h"
#include "core/model/model.h"
#include "tests/layer_specs.h"
#include "tests/test_util.h"

namespace monsoon {
namespace {

// C [m x n] = op(A) B with A [m x k] (or, transposed, [k x m]) and B [k x n], row-major: the
// product cuBLAS computes for the backend's Gemm calls.
std::vector<float> Product(const std::vector<float>& a, bool trans_a, const std::vector<float>& b,
                           bool trans_b, size_t m, size_t n, size_t k) {
  std::vector<float> c(m * n, 0.0f);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (size_t l = 0; l < k; ++l) {
        sum += static_cast<double>(trans_a ? a[l * m + i] : a[i * k + l]) *
               (trans_b ? b[j * k + l] : b[l * n + j]);
      }
      c[i * n + j] = static_cast<float>(sum);
    }
  }
  return c;
}

template <class F>
std::vector<float> Elements(size_t n, F element) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = element(i);
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).epsilon(1e-4).margin(1e-4));
  }
}

TEST_CASE("GPU convolution scheme: forward and backward match the CPU backend, odd shapes",
          "[core][conv][gpu-emulation]") {
  CpuBackend cpu;
  const int batch = 3;
  uint32_t seed = 1;
  for (const auto& [layer, in] :
       std::vector<std::pair<LayerSpec, Shape>>{{Conv(4, 3, 2, Padding::kSame), {2, 7, 5}},
                                                {Conv(3, 2, 1, Padding::kValid), {3, 6, 6}},
                                                {Conv(5, 3, 1, Padding::kSame), {1, 8, 9}},
                                                {Conv(2, 1, 3, Padding::kValid), {2, 7, 7}},
                                                {Conv(3, 4, 2, Padding::kSame), {2, 9, 6}}}) {
    const Conv2dGeometry g = ConvGeometryOf(layer, in);
    INFO("filters " << g.filters << " kernel " << g.kernel << " stride " << g.stride << " input "
                    << ShapeText(in));
    const size_t columns = static_cast<size_t>(batch) * g.out_height * g.out_width;
    const size_t inputs = static_cast<size_t>(batch) * g.channels * g.height * g.width;
    const size_t patch = g.patch(), outputs = g.filters * columns;
    const auto x = Random(inputs, ++seed), w = Random(g.filters * patch, ++seed),
               b = Random(g.filters, ++seed), dy = Random(outputs, ++seed);
    // Forward, as Conv2dForward in core/compute/cuda/cublas_backend.cu.
    const auto cols =
        Elements(patch * columns, [&](size_t i) { return Im2ColElement(g, batch, x.data(), i); });
    const auto yt = Product(w, false, cols, false, g.filters, columns, patch);
    const auto y = Elements(
        outputs, [&](size_t i) { return ConvOutputElement(g, batch, yt.data(), b.data(), i); });
    std::vector<float> want_y(outputs);
    cpu.Conv2dForward(g, x.data(), w.data(), b.data(), batch, want_y.data());
    ExpectNear(y, want_y);
    // Backward, as Conv2dBackward.
    const auto dyt =
        Elements(outputs, [&](size_t i) { return FilterMajorElement(g, batch, dy.data(), i); });
    const auto dw = Product(dyt, false, cols, true, g.filters, patch, columns);
    const auto db =
        Product(dyt, false, std::vector<float>(columns, 1.0f), false, g.filters, 1, columns);
    const auto dcols = Product(w, true, dyt, false, patch, columns, g.filters);
    const auto dx =
        Elements(inputs, [&](size_t i) { return Col2ImElement(g, batch, dcols.data(), i); });
    std::vector<float> want_dw(w.size()), want_db(g.filters), want_dx(inputs);
    cpu.Conv2dBackward(g, x.data(), w.data(), dy.data(), batch, want_dw.data(), want_db.data(),
                       want_dx.data());
    ExpectNear(dw, want_dw);
    ExpectNear(db, want_db);
    ExpectNear(dx, want_dx);
  }
}

TEST_CASE("GPU pooling: forward and backward match the CPU backend",
          "[core][conv][gpu-emulation]") {
  CpuBackend cpu;
  const int batch = 2, channels = 3;
  uint32_t seed = 100;
  // Windows that tile the plane (the CPU's 2x2 fast path), overlap, and leave a row out.
  for (const auto& [size, stride, height, width] :
       std::vector<std::array<int, 4>>{{2, 2, 6, 4}, {3, 1, 5, 6}, {2, 2, 7, 5}, {3, 2, 7, 7}}) {
    const Pool2dGeometry g =
        PoolGeometryOf(Pool(LayerKind::kMaxPool2d, size, stride), {channels, height, width});
    INFO("size " << size << " stride " << stride << " input " << height << "x" << width);
    const size_t inputs = static_cast<size_t>(batch) * channels * height * width;
    const size_t outputs = static_cast<size_t>(batch) * channels * g.out_height * g.out_width;
    // Ties decide where max pooling sends a gradient (after a ReLU, whole windows are 0):
    // values from {-1, 0, 1} make them common.
    auto x = Random(inputs, ++seed);
    for (float& v : x) v = std::round(v);
    const auto dy = Random(outputs, ++seed);
    for (const PoolKind kind : {PoolKind::kMax, PoolKind::kAverage}) {
      const bool max = kind == PoolKind::kMax;
      std::vector<float> want_y(outputs), want_dx(inputs);
      cpu.Pool2dForward(g, kind, x.data(), batch, want_y.data(), nullptr);
      cpu.Pool2dBackward(g, kind, x.data(), want_y.data(), nullptr, dy.data(), batch,
                         want_dx.data());
      ExpectNear(
          Elements(outputs, [&](size_t i) { return PoolForwardElement(g, max, x.data(), i); }),
          want_y);
      ExpectNear(
          Elements(inputs,
                   [&](size_t i) { return PoolBackwardElement(g, max, x.data(), dy.data(), i); }),
          want_dx);
    }
  }
}

TEST_CASE("Dropout: the CPU's masks are DropoutScale's, which the GPU kernel uses",
          "[core][conv][gpu-emulation]") {
  CpuBackend cpu;
  const size_t n = 1000;
  const auto x = Random(n, 7);
  std::vector<float> mask(n), y(n);
  cpu.DropoutForward(0.25f, 42, x.data(), mask.data(), y.data(), n);
  size_t dropped = 0;
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(mask[i] == DropoutScale(0.25f, 42, i));
    dropped += mask[i] == 0.0f;
  }
  CHECK(dropped > 200);
  CHECK(dropped < 300);
}

}  // namespace
}  // namespace monsoon
