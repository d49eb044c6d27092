// The CUDA backend against the CPU backend on random inputs, including odd sizes. Where no
// usable GPU exists (or the build has no CUDA), every case prints the "SKIPPED: no GPU" line
// tools/test.sh counts as a skip, and passes; with MONSOON_REQUIRE_GPU=1 it fails instead.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/compute/compute_backends.h"
#include "core/compute/cpu/cpu_backend.h"
#include "core/finite.h"
#include "core/model/model.h"
#include "tests/layer_specs.h"
#include "tests/test_util.h"

// REQUIRE(status.ok()) that prints the status when it is not.
#define REQUIRE_OK(status)                         \
  do {                                             \
    const absl::Status required_status = (status); \
    INFO(required_status.ToString());              \
    REQUIRE(required_status.ok());                 \
  } while (false)

namespace monsoon {
namespace {

// The CUDA backend compute.device: cuda selects (with `workspace_mib` for convolutions,
// `precision` for matrix products and `cudnn_path` for compute.cudnn_path), or nullptr after
// the skip line when there is none.
std::unique_ptr<ComputeBackend> GpuOrSkip(int workspace_mib = ComputeConfig().gpu_workspace_mib,
                                          Precision precision = Precision::kFp32,
                                          const std::string& cudnn_path = "auto") {
  ComputeConfig compute;
  compute.device = Device::kCuda;
  compute.gpu_workspace_mib = workspace_mib;
  compute.precision = precision;
  compute.cudnn_path = *CudnnLibrary::Parse(cudnn_path);
  auto selection = MakeComputeBackend(compute, 0);
  if (!selection.ok()) {
    const char* require = std::getenv("MONSOON_REQUIRE_GPU");
    if (require != nullptr && std::string(require) == "1") {
      FAIL("MONSOON_REQUIRE_GPU=1 but no GPU: " << selection.status().message());
    }
    std::cout << "SKIPPED: no GPU (" << selection.status().message() << ")" << std::endl;
    return nullptr;
  }
  return std::move(selection->backend);
}

// A model on the CPU and the same on the GPU, both holding InitialValues(spec, seed).
struct TwinModels {
  std::unique_ptr<Model> on_cpu, on_gpu;
  std::vector<float> params;
};
TwinModels MakeTwins(const ModelSpec& spec, CpuBackend* cpu, ComputeBackend* gpu, uint64_t seed) {
  auto on_cpu = Model::Create(spec, cpu);
  auto on_gpu = Model::Create(spec, gpu);
  REQUIRE(on_cpu.ok());
  REQUIRE(on_gpu.ok());
  TwinModels twins{*std::move(on_cpu), *std::move(on_gpu), {}};
  twins.params.resize(twins.on_cpu->num_params());
  Model::InitialValues(spec, seed, 0, absl::MakeSpan(twins.params));
  twins.on_cpu->SetParams(twins.params.data());
  twins.on_gpu->SetParams(twins.params.data());
  return twins;
}

// The two models' last batch: the same loss, hits and gradients.
void ExpectSameGradients(Model* on_cpu, Model* on_gpu, const BatchResult& bc,
                         const BatchResult& bg) {
  std::vector<float> gc(on_cpu->num_params()), gg(on_gpu->num_params());
  on_cpu->GetGrads(gc.data());
  on_gpu->GetGrads(gg.data());
  REQUIRE_OK(on_gpu->Synchronize());
  CHECK(bg.loss_sum == Approx(bc.loss_sum).epsilon(1e-4));
  CHECK(bg.correct == bc.correct);
  for (size_t i = 0; i < gc.size(); ++i) REQUIRE(gg[i] == Approx(gc[i]).epsilon(1e-3).margin(1e-5));
}

// One training step of both models on the same batch, the GPU's gradient streamed where
// `stream`: their losses and gradients (within `margin`) must agree. Returns the CPU's.
std::vector<float> ExpectSameStep(Model* on_cpu, Model* on_gpu, const float* x, const float* y,
                                  int rows, bool stream, double margin) {
  std::vector<float> gc(on_cpu->num_params()), gg(gc.size());
  on_gpu->StreamGradientsTo(stream ? gg.data() : nullptr);
  const BatchResult bc = on_cpu->ComputeGradients(x, y, rows);
  const BatchResult bg = on_gpu->ComputeGradients(x, y, rows);
  on_cpu->GetGrads(gc.data());
  on_gpu->GetGrads(gg.data());
  REQUIRE_OK(on_gpu->Synchronize());
  CHECK(bg.loss_sum == Approx(bc.loss_sum).epsilon(1e-4));
  // The gradients, then the state's values (BatchNorm's running statistics).
  for (size_t i = 0; i < gc.size(); ++i) {
    INFO("gradient " << i);
    REQUIRE(gg[i] == Approx(gc[i]).epsilon(1e-3).margin(margin));
  }
  return gc;
}

// The same host data on both backends; results come back as host vectors.
struct Pair {
  CpuBackend cpu;
  ComputeBackend* gpu;
  std::vector<DeviceBuffer> keep;

  std::pair<float*, float*> Upload(const std::vector<float>& host) {
    keep.push_back(cpu.Allocate(host.size()));
    float* c = keep.back().data();
    cpu.CopyToDevice(host.data(), c, host.size());
    keep.push_back(gpu->Allocate(host.size()));
    float* g = keep.back().data();
    gpu->CopyToDevice(host.data(), g, host.size());
    return {c, g};
  }
  std::pair<float*, float*> Zeros(size_t n) { return Upload(std::vector<float>(n, 0.0f)); }
  // The losses a loss method wrote into `at` on each backend.
  std::pair<LossResult, LossResult> Losses(std::pair<float*, float*> at) {
    float c[kLossFloats], g[kLossFloats];
    cpu.CopyToHost(at.first, c, kLossFloats);
    gpu->CopyToHost(at.second, g, kLossFloats);
    REQUIRE_OK(gpu->Synchronize());
    return {LossResult::Read(c), LossResult::Read(g)};
  }
  void ExpectSame(std::pair<float*, float*> p, size_t n, double tolerance = 1e-4) {
    std::vector<float> c(n), g(n);
    cpu.CopyToHost(p.first, c.data(), n);
    gpu->CopyToHost(p.second, g.data(), n);
    REQUIRE_OK(gpu->Synchronize());
    for (size_t i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE(g[i] == Approx(c[i]).epsilon(tolerance).margin(tolerance));
    }
  }
};

TEST_CASE("CublasBackend: Gemm matches the CPU for all transposes and odd shapes",
          "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  Pair p{CpuBackend(), gpu.get(), {}};
  int seed = 0;
  for (int m : {1, 7, 130}) {
    for (int n : {3, 33}) {
      for (int k : {1, 65, 257}) {
        for (bool ta : {false, true}) {
          for (bool tb : {false, true}) {
            auto a = p.Upload(Random(static_cast<size_t>(m) * k, ++seed));
            auto b = p.Upload(Random(static_cast<size_t>(k) * n, ++seed));
            auto c = p.Upload(Random(static_cast<size_t>(m) * n, ++seed));
            p.cpu.Gemm(ta, tb, m, n, k, 0.7f, a.first, b.first, 0.3f, c.first);
            gpu->Gemm(ta, tb, m, n, k, 0.7f, a.second, b.second, 0.3f, c.second);
            INFO("m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb);
            p.ExpectSame(c, static_cast<size_t>(m) * n);
          }
        }
      }
    }
  }
}

TEST_CASE("CublasBackend: tf32 and bf16 products are fp32's within their operands' rounding",
          "[gpu][parity]") {
  const int m = 37, n = 29, k = 300;
  const std::vector<float> a = Random(static_cast<size_t>(m) * k, 1);
  const std::vector<float> b = Random(static_cast<size_t>(k) * n, 2);
  for (const auto& [precision, mantissa_bits] : {std::pair{Precision::kTf32, 10},
                                                 std::pair{Precision::kBf16, 7}}) {
    auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, precision);
    if (gpu == nullptr) return;
    DeviceBuffer da = gpu->Allocate(a.size()), db = gpu->Allocate(b.size());
    DeviceBuffer dc = gpu->Allocate(static_cast<size_t>(m) * n);
    gpu->CopyToDevice(a.data(), da.data(), a.size());
    gpu->CopyToDevice(b.data(), db.data(), b.size());
    gpu->Gemm(false, false, m, n, k, 1.0f, da.data(), db.data(), 0.0f, dc.data());
    std::vector<float> c(static_cast<size_t>(m) * n);
    gpu->CopyToHost(dc.data(), c.data(), c.size());
    REQUIRE_OK(gpu->Synchronize());
    // Each operand within half a unit of its last mantissa bit: each term within 2^-bits of
    // its own magnitude, so the sum within 2^-bits of the sum of magnitudes (and fp32's own
    // rounding).
    size_t outside = 0;
    double worst = 0;
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double exact = 0, magnitude = 0;
        for (int p = 0; p < k; ++p) {
          const double term = static_cast<double>(a[i * k + p]) * b[p * n + j];
          exact += term;
          magnitude += std::abs(term);
        }
        const double bound = std::ldexp(magnitude, -mantissa_bits) + 1e-5 * (1 + magnitude);
        outside += std::abs(c[i * n + j] - exact) > bound;
        worst = std::max(worst, std::abs(c[i * n + j] - exact) / magnitude);
      }
    }
    INFO("precision " << kPrecisionNames.Name(precision) << " on " << gpu->name()
                      << ": worst error " << worst << " of the magnitudes' sum");
    CHECK(outside == 0);
    // The host emulation rounds as the precision says, every time; cuBLAS may take plain fp32
    // kernels for some shapes, so on a GPU the rounding is not required.
    if (gpu->name().find("host emulation") != std::string::npos) {
      CHECK(worst > std::ldexp(1.0, -mantissa_bits - 6));
    }
  }
}

TEST_CASE("CublasBackend: elementwise kernels, losses, axpy and Nesterov match the CPU",
          "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  Pair p{CpuBackend(), gpu.get(), {}};
  const int rows = 37, cols = 11;
  const size_t n = static_cast<size_t>(rows) * cols;
  auto x = p.Upload(Random(n, 1, -3, 3));
  auto bias = p.Upload(Random(cols, 2));
  p.cpu.AddBias(bias.first, rows, cols, x.first);
  gpu->AddBias(bias.second, rows, cols, x.second);
  p.ExpectSame(x, n);
  auto sums = p.Zeros(cols);
  p.cpu.ColumnSum(x.first, rows, cols, sums.first);
  gpu->ColumnSum(x.second, rows, cols, sums.second);
  p.ExpectSame(sums, cols);
  for (const Activation f : kAllActivations) {
    for (const float slope : {0.0f, 0.01f, 0.3f}) {
      if (f != Activation::kLeakyRelu && slope != 0.0f) continue;
      INFO(ActivationName(f) << " slope " << slope);
      auto y = p.Zeros(n);
      auto dy = p.Upload(Random(n, 3));
      auto dx = p.Zeros(n);
      p.cpu.ActivationForward({f, slope}, x.first, y.first, n);
      gpu->ActivationForward({f, slope}, x.second, y.second, n);
      p.ExpectSame(y, n);
      p.cpu.ActivationBackward({f, slope}, x.first, y.first, dy.first, dx.first, n);
      gpu->ActivationBackward({f, slope}, x.second, y.second, dy.second, dx.second, n);
      p.ExpectSame(dx, n);
    }
  }
  std::vector<float> labels(rows);
  for (int r = 0; r < rows; ++r) labels[r] = static_cast<float>((r * 7) % cols);
  auto l = p.Upload(labels);
  auto dlogits = p.Zeros(n);
  auto loss = p.Zeros(kLossFloats);
  p.cpu.SoftmaxCrossEntropy(x.first, l.first, rows, cols, dlogits.first, loss.first);
  gpu->SoftmaxCrossEntropy(x.second, l.second, rows, cols, dlogits.second, loss.second);
  const auto [lc, lg] = p.Losses(loss);
  CHECK(lg.loss_sum == Approx(lc.loss_sum).epsilon(1e-4));
  CHECK(lg.correct == lc.correct);
  CHECK(lc.correct > 0);
  p.ExpectSame(dlogits, n);
  auto target = p.Upload(Random(n, 4));
  auto dpred = p.Zeros(n);
  p.cpu.MeanSquaredError(x.first, target.first, rows, cols, dpred.first, loss.first);
  gpu->MeanSquaredError(x.second, target.second, rows, cols, dpred.second, loss.second);
  const auto [mc, mg] = p.Losses(loss);
  CHECK(mg.loss_sum == Approx(mc.loss_sum).epsilon(1e-4));
  CHECK(mg.correct == 0);
  p.ExpectSame(dpred, n);
  p.cpu.Axpy(-0.25f, dpred.first, x.first, n);
  gpu->Axpy(-0.25f, dpred.second, x.second, n);
  p.ExpectSame(x, n);
  // EAMSGD's local step, twice so that the velocity carries over.
  auto v = p.Zeros(n);
  for (int step = 0; step < 2; ++step) {
    p.cpu.NesterovStep(0.05f, 0.9f, dpred.first, v.first, x.first, n);
    gpu->NesterovStep(0.05f, 0.9f, dpred.second, v.second, x.second, n);
  }
  p.ExpectSame(v, n);
  p.ExpectSame(x, n);
}

TEST_CASE("CublasBackend: an MLP's loss, gradients and local SGD step match the CPU",
          "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  CpuBackend cpu;
  ModelSpec spec;
  spec.input_dim = 37;
  spec.output_dim = 5;
  spec.hidden = {29, 13};
  spec.activation = Activation::kTanh;
  auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), 9);
  const int rows = 67;
  const auto x = Random(static_cast<size_t>(rows) * spec.input_dim, 5);
  std::vector<float> y(rows);
  for (int r = 0; r < rows; ++r) y[r] = static_cast<float>(r % spec.output_dim);
  const BatchResult bc = on_cpu->ComputeGradients(x.data(), y.data(), rows);
  const BatchResult bg = on_gpu->ComputeGradients(x.data(), y.data(), rows);
  REQUIRE_OK(on_gpu->Synchronize());
  CHECK(bg.loss_sum == Approx(bc.loss_sum).epsilon(1e-4));
  CHECK(bg.correct == bc.correct);
  std::vector<float> gc(params.size()), gg(params.size());
  on_cpu->GetGrads(gc.data());
  CHECK(on_gpu->GetGrads(gg.data()) == gg.size());  // every value finite
  for (size_t i = 0; i < gc.size(); ++i) REQUIRE(gg[i] == Approx(gc[i]).epsilon(1e-3).margin(1e-5));
  // Streamed layer by layer during backward, through staging and then straight into pinned
  // memory (twice each: the buffers are reused), the same.
  std::vector<float> streamed(params.size());
  for (int round = 0; round < 4; ++round) {
    std::fill(streamed.begin(), streamed.end(), -1.0f);
    const HostPin pin = round < 2 ? HostPin() : on_gpu->PinHostMemory(absl::MakeSpan(streamed));
    CHECK(pin.pinned() == (round >= 2));
    on_gpu->StreamGradientsTo(streamed.data());
    on_gpu->ComputeGradients(x.data(), y.data(), rows);
    on_gpu->GetGrads(streamed.data());
    REQUIRE_OK(on_gpu->Synchronize());
    CHECK(streamed == gg);
  }
  on_cpu->ApplyLocalSgd(0.1f);
  on_gpu->ApplyLocalSgd(0.1f);
  std::vector<float> pc(params.size()), pg(params.size());
  on_cpu->GetParams(pc.data());
  on_gpu->GetParams(pg.data());
  REQUIRE_OK(on_gpu->Synchronize());
  for (size_t i = 0; i < pc.size(); ++i) REQUIRE(pg[i] == Approx(pc[i]).epsilon(1e-4).margin(1e-5));

  // A NaN in the batch: GetGrads says where the first non-finite value it copied is, whether
  // copied whole or streamed in parts.
  std::vector<float> bad_x = x;
  bad_x[3 * spec.input_dim + 4] = std::nanf("");
  for (const int way : {0, 1, 2}) {  // copied whole, streamed, streamed into pinned memory
    std::vector<float> got(params.size());
    const HostPin pin = way == 2 ? on_gpu->PinHostMemory(absl::MakeSpan(got)) : HostPin();
    on_gpu->StreamGradientsTo(way == 0 ? nullptr : got.data());
    on_gpu->ComputeGradients(bad_x.data(), y.data(), rows);
    const size_t first = on_gpu->GetGrads(got.data());
    REQUIRE_OK(on_gpu->Synchronize());
    CHECK(first < got.size());
    CHECK(first == FirstNonFinite(got));
  }
}

// A ReLU MLP whose every tensor starts 16-byte aligned, as the default model's do: its dense
// layers run on cuBLASLt (bias and ReLU in the product's call, the bias gradient in the
// weights'), where cuBLASLt has an algorithm; the odd-shaped models above mostly cannot.
TEST_CASE("CublasBackend: a ReLU MLP on aligned tensors matches the CPU", "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  CpuBackend cpu;
  const ModelSpec spec = Mlp(48, {32, 16}, 8);
  auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), 21);
  for (const int rows : {37, 1}) {
    const auto x = Random(static_cast<size_t>(rows) * spec.input_dim, 23);
    std::vector<float> y(rows);
    for (int r = 0; r < rows; ++r) y[r] = static_cast<float>(r * 5 % spec.output_dim);
    const BatchResult bc = on_cpu->ComputeGradients(x.data(), y.data(), rows);
    const BatchResult bg = on_gpu->ComputeGradients(x.data(), y.data(), rows);
    ExpectSameGradients(on_cpu.get(), on_gpu.get(), bc, bg);
  }
}

// A worker's shard held on the device: each batch gathered there trains as the CPU trains on
// the same rows.
TEST_CASE("CublasBackend: batches gathered from held rows match the CPU", "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  CpuBackend cpu;
  const ModelSpec spec = Mlp(23, {11}, 4);
  auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), 3);
  const size_t shard = 301;
  const std::vector<float> features = Random(shard * 23, 11);
  std::vector<float> targets(shard);
  for (size_t r = 0; r < shard; ++r) targets[r] = static_cast<float>(r * 7 % 4);
  const size_t bytes = (features.size() + targets.size()) * sizeof(float);
  CHECK_FALSE(on_gpu->HoldRows(features, targets, bytes - 4));
  REQUIRE(on_gpu->HoldRows(features, targets, bytes));
  for (const std::vector<uint32_t>& rows :
       {std::vector<uint32_t>{300, 0, 17, 17, 299}, std::vector<uint32_t>{5, 250, 1}}) {
    std::vector<float> x, y;
    for (const uint32_t r : rows) {
      x.insert(x.end(), features.begin() + 23 * r, features.begin() + 23 * (r + 1));
      y.push_back(targets[r]);
    }
    const int n = static_cast<int>(rows.size());
    const BatchResult bc = on_cpu->ComputeGradients(x.data(), y.data(), n);
    const BatchResult bg = on_gpu->ComputeGradientsOnHeld(rows);
    ExpectSameGradients(on_cpu.get(), on_gpu.get(), bc, bg);
  }
}

// A batch prefetched during the step before it (Model::PrefetchBatch), as a worker streams its
// batches through two host buffers: each step's loss and gradient match the CPU's, pinned
// buffers or not, replayed as graphs or not, through a short batch, a step whose batch was not
// the one prefetched and a step with no prefetch before it.
TEST_CASE("CublasBackend: batches prefetched during the step before match the CPU",
          "[gpu][parity][graph]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  const bool pinned = GENERATE(true, false);
  INFO("pinned buffers " << pinned);
  CpuBackend cpu;
  const ModelSpec spec = Mlp(23, {11}, 4);
  auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), 5);
  REQUIRE(on_gpu->prefetches_batches());
  const int full = 9;
  std::vector<float> x[2], y[2];
  std::vector<HostPin> pins;
  for (int b = 0; b < 2; ++b) {
    x[b].resize(full * 23);
    y[b].resize(full);
    if (pinned) {
      pins.push_back(gpu->PinHostMemory(x[b].data(), x[b].size()));
      pins.push_back(gpu->PinHostMemory(y[b].data(), y[b].size()));
    }
  }
  // Step s trains on buffer s % 2 holding batch s; 5 is short; 7 is prefetched but step 7
  // trains on a fresh copy of it; none is prefetched for step 11.
  const std::vector<int> rows = {9, 9, 9, 9, 9, 4, 9, 9, 9, 9, 9, 9};
  auto fill = [&](int step) {
    const int b = step % 2;
    const std::vector<float> values = Random(static_cast<size_t>(rows[step]) * 23, 70 + step);
    std::copy(values.begin(), values.end(), x[b].begin());
    for (int r = 0; r < rows[step]; ++r) y[b][r] = static_cast<float>((r + step) % 4);
  };
  fill(0);
  for (int step = 0; step < static_cast<int>(rows.size()); ++step) {
    INFO("step " << step);
    const int b = step % 2;
    if (step + 1 < static_cast<int>(rows.size()) - 1) {
      fill(step + 1);
      on_gpu->PrefetchBatch(x[1 - b].data(), y[1 - b].data(), rows[step + 1]);
    } else if (step + 1 < static_cast<int>(rows.size())) {
      fill(step + 1);
    }
    on_cpu->SetParams(params.data());
    on_gpu->SetParams(params.data());
    // Step 7's batch as a fresh copy: not the memory prefetched.
    const std::vector<float> xs = x[b], ys = y[b];
    const bool copy = step == 7;
    const std::vector<float> gc =
        ExpectSameStep(on_cpu.get(), on_gpu.get(), (copy ? xs : x[b]).data(),
                       (copy ? ys : y[b]).data(), rows[step], step % 3 == 0, 1e-5);
    for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.1f * gc[i];
  }
  CHECK(on_gpu->prefetched_batches() == 9);  // steps 1-10 but 7
}

// Training steps replayed as graphs: the second step of each batch size is recorded, later
// ones replay it on the current weights and batch; a larger batch (new buffers) drops the
// graphs; a model with dropout (new masks every batch) is never graphed.
TEST_CASE("CublasBackend: steps replayed as graphs match the CPU step by step",
          "[gpu][parity][graph]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  ModelSpec cnn;
  cnn.type = ModelType::kLayers;
  cnn.input_shape = {2, 6, 6};
  cnn.input_dim = 72;
  cnn.layers = {Conv(3, 3, 1, Padding::kSame),     BatchNorm(),           {LayerKind::kRelu},
                Pool(LayerKind::kMaxPool2d, 2, 2), {LayerKind::kFlatten}, {LayerKind::kDense, 4}};
  cnn.output_dim = 4;
  ModelSpec with_dropout = cnn;
  with_dropout.layers.insert(with_dropout.layers.begin() + 5, Dropout(0.5));
  for (const bool dropout : {false, true}) {
    const ModelSpec& spec = dropout ? with_dropout : cnn;
    INFO(Model::Summary(spec));
    CpuBackend cpu;
    auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), 2);
    int step = 0;
    for (const int rows : {9, 9, 9, 9, 5, 5, 5, 12, 9, 9, 9, 12, 12}) {
      INFO("step " << step << ", " << rows << " rows");
      on_cpu->SetParams(params.data());
      on_gpu->SetParams(params.data());
      on_cpu->set_batch_seed(step);
      on_gpu->set_batch_seed(step);
      const auto x = Random(static_cast<size_t>(rows) * spec.input_dim, 50 + step);
      std::vector<float> y(rows);
      for (int r = 0; r < rows; ++r) y[r] = static_cast<float>((r + step) % 4);
      const std::vector<float> gc =
          ExpectSameStep(on_cpu.get(), on_gpu.get(), x.data(), y.data(), rows, true, 1e-4);
      // The next step's weights: one SGD step, so that a replay must read the new ones.
      for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.1f * gc[i];
      ++step;
    }
    // Each batch size's first step runs call by call, the second is recorded and run as a
    // graph, later ones replay it: steps 1-3 (9 rows) and 5-6 (5 rows); the first 12-row
    // batch (step 7) grows the buffers and drops every graph; then 9-10 (9 rows) and 11-12.
    if (gpu->BeginGraph()) {  // a backend with graphs
      CHECK(gpu->EndGraph() >= 0);
      CHECK(on_gpu->graphed_steps() == (dropout ? 0 : 9));
    }
  }
}

TEST_CASE("CublasBackend: a CNN's loss and gradients match the CPU, odd shapes, every layer",
          "[gpu][parity][conv]") {
  // Monsoon's own kernels, then cuDNN where `auto` finds it.
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  CpuBackend cpu;
  ModelSpec spec;
  spec.type = ModelType::kLayers;
  spec.input_shape = {2, 13, 11};
  spec.input_dim = 2 * 13 * 11;
  // Strided `same` convolution, ReLU (ties for max pooling), 2x2 max pooling that leaves a row
  // out, a `valid` convolution, overlapping average pooling, dropout, dense.
  spec.layers = {Conv(3, 3, 2, Padding::kSame),
                 {LayerKind::kRelu},
                 Pool(LayerKind::kMaxPool2d, 2, 2),
                 Conv(4, 2, 1, Padding::kValid),
                 {LayerKind::kTanh},
                 Pool(LayerKind::kAvgPool2d, 2, 1),
                 Dropout(0.3),
                 {LayerKind::kFlatten},
                 {LayerKind::kDense, 5}};
  spec.output_dim = 5;
  auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), 3);
  for (const int rows : {13, 64}) {
    const auto x = Random(static_cast<size_t>(rows) * spec.input_dim, rows);
    std::vector<float> y(rows);
    for (int r = 0; r < rows; ++r) y[r] = static_cast<float>(r % spec.output_dim);
    on_cpu->set_batch_seed(rows);
    on_gpu->set_batch_seed(rows);
    const BatchResult bc = on_cpu->ComputeGradients(x.data(), y.data(), rows);
    const BatchResult bg = on_gpu->ComputeGradients(x.data(), y.data(), rows);
    REQUIRE_OK(on_gpu->Synchronize());
    CHECK(bg.loss_sum == Approx(bc.loss_sum).epsilon(1e-4));
    std::vector<float> gc(params.size()), gg(params.size());
    on_cpu->GetGrads(gc.data());
    on_gpu->GetGrads(gg.data());
    for (size_t i = 0; i < gc.size(); ++i) {
      INFO("batch " << rows << " gradient " << i);
      REQUIRE(gg[i] == Approx(gc[i]).epsilon(1e-3).margin(1e-5));
    }
    const BatchResult ec = on_cpu->Evaluate(x.data(), y.data(), rows);
    const BatchResult eg = on_gpu->Evaluate(x.data(), y.data(), rows);
    CHECK(eg.loss_sum == Approx(ec.loss_sum).epsilon(1e-4));
    CHECK(eg.correct == ec.correct);
  }
}

// Inputs in multiples of 0.5, so that max-pooling windows hold ties.
std::vector<float> Quantised(size_t n, uint64_t seed) {
  std::vector<float> v = Random(n, seed, -2, 2);
  for (float& x : v) x = std::round(x * 2) / 2;
  return v;
}

TEST_CASE("CublasBackend: convolutions match the CPU over a grid of geometries",
          "[gpu][parity][conv]") {
  // Monsoon's own kernels, then cuDNN where `auto` finds it.
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  Pair p{CpuBackend(), gpu.get(), {}};
  int cases = 0;
  // 1 and 3 channels, non-square and 1-row inputs, kernels above and below the stride, same
  // and valid padding, batch 1 and odd.
  for (const Shape& in : {Shape{1, 5, 7}, Shape{3, 8, 8}, Shape{1, 9, 4}, Shape{3, 1, 6}}) {
    for (const int kernel : {1, 2, 3}) {
      for (const int stride : {1, 2, 3}) {
        for (const Padding padding : {Padding::kSame, Padding::kValid}) {
          for (const int batch : {1, 3}) {
            const Conv2dGeometry g = ConvGeometryOf(Conv(4, kernel, stride, padding), in);
            if (g.out_height < 1 || g.out_width < 1) continue;
            INFO("input " << ShapeText(in) << " kernel " << kernel << " stride " << stride
                          << (padding == Padding::kSame ? " same" : " valid") << " batch "
                          << batch);
            ++cases;
            const size_t xs = static_cast<size_t>(batch) * ShapeSize(in);
            const size_t ys = static_cast<size_t>(batch) * g.filters * g.out_height * g.out_width;
            auto x = p.Upload(Random(xs, cases));
            auto w = p.Upload(Random(static_cast<size_t>(g.filters) * g.patch(), cases + 1));
            auto b = p.Upload(Random(g.filters, cases + 2));
            auto y = p.Zeros(ys);
            p.cpu.Conv2dForward(g, x.first, w.first, b.first, batch, y.first);
            gpu->Conv2dForward(g, x.second, w.second, b.second, batch, y.second);
            p.ExpectSame(y, ys);
            auto dy = p.Upload(Random(ys, cases + 3));
            auto dw = p.Zeros(static_cast<size_t>(g.filters) * g.patch());
            auto db = p.Zeros(g.filters);
            auto dx = p.Zeros(xs);
            p.cpu.Conv2dBackward(g, x.first, w.first, dy.first, batch, dw.first, db.first,
                                 dx.first);
            gpu->Conv2dBackward(g, x.second, w.second, dy.second, batch, dw.second, db.second,
                                dx.second);
            p.ExpectSame(dw, static_cast<size_t>(g.filters) * g.patch());
            p.ExpectSame(db, g.filters);
            p.ExpectSame(dx, xs);
          }
        }
      }
    }
  }
  CHECK(cases > 100);
}

TEST_CASE("CublasBackend: a convolution whose batch goes through im2col in chunks matches the CPU",
          "[gpu][parity][conv]") {
  // 1 MiB of workspace holds the columns of two of these examples (about 405 KB each with the
  // input gradient's): the batch of 5 runs as 2, 2 and 1, dw and db summed over them.
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(/*workspace_mib=*/1, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  Pair p{CpuBackend(), gpu.get(), {}};
  const Shape in = {8, 24, 24};
  const Conv2dGeometry g = ConvGeometryOf(Conv(32, 3, 1, Padding::kSame), in);
  const int batch = 5;
  const size_t xs = static_cast<size_t>(batch) * ShapeSize(in);
  const size_t ys = static_cast<size_t>(batch) * g.filters * g.out_height * g.out_width;
  const size_t ws = static_cast<size_t>(g.filters) * g.patch();
  auto x = p.Upload(Random(xs, 1));
  auto w = p.Upload(Random(ws, 2));
  auto b = p.Upload(Random(g.filters, 3));
  auto y = p.Zeros(ys);
  p.cpu.Conv2dForward(g, x.first, w.first, b.first, batch, y.first);
  gpu->Conv2dForward(g, x.second, w.second, b.second, batch, y.second);
  p.ExpectSame(y, ys);
  auto dy = p.Upload(Random(ys, 4));
  auto dw = p.Zeros(ws);
  auto db = p.Zeros(g.filters);
  auto dx = p.Zeros(xs);
  p.cpu.Conv2dBackward(g, x.first, w.first, dy.first, batch, dw.first, db.first, dx.first);
  gpu->Conv2dBackward(g, x.second, w.second, dy.second, batch, dw.second, db.second, dx.second);
  p.ExpectSame(dw, ws, 1e-3);
  p.ExpectSame(db, g.filters, 1e-3);
  p.ExpectSame(dx, xs);
}

// An image model's layer at full size, 256 x 64 x 224 x 224 through a 3x3 convolution to 64
// filters, forward and backward: it runs, its workspace within compute.gpu_workspace_mib
// (tests/cuda_emulation measures the peak). Hidden: 13 GB of tensors, for GPUs and the
// emulation's dry run.
TEST_CASE("CublasBackend: a full-size image layer's step", "[.workspace]") {
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  const Shape in = {64, 224, 224};
  const Conv2dGeometry g = ConvGeometryOf(Conv(64, 3, 1, Padding::kSame), in);
  const int batch = 256;
  const size_t xs = static_cast<size_t>(batch) * ShapeSize(in);
  DeviceBuffer x = gpu->Allocate(xs), dx = gpu->Allocate(xs), y = gpu->Allocate(xs),
               dy = gpu->Allocate(xs), w = gpu->Allocate(static_cast<size_t>(64) * g.patch()),
               dw = gpu->Allocate(static_cast<size_t>(64) * g.patch()), b = gpu->Allocate(64),
               db = gpu->Allocate(64);
  gpu->Conv2dForward(g, x.data(), w.data(), b.data(), batch, y.data());
  gpu->Conv2dBackward(g, x.data(), w.data(), dy.data(), batch, dw.data(), db.data(), dx.data());
  const absl::Status status = gpu->Synchronize();
  INFO(status.ToString());
  CHECK(status.ok());
}

TEST_CASE("CublasBackend: max and average pooling match the CPU, strides above the size",
          "[gpu][parity][conv]") {
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  Pair p{CpuBackend(), gpu.get(), {}};
  int cases = 0;
  for (const PoolKind kind : {PoolKind::kMax, PoolKind::kAverage}) {
    for (const Shape& in : {Shape{1, 5, 7}, Shape{3, 4, 4}, Shape{2, 9, 6}}) {
      for (const int size : {1, 2, 3}) {
        for (const int stride : {1, 2, 3}) {
          for (const int batch : {1, 2}) {
            const LayerKind layer =
                kind == PoolKind::kMax ? LayerKind::kMaxPool2d : LayerKind::kAvgPool2d;
            const Pool2dGeometry g = PoolGeometryOf(Pool(layer, size, stride), in);
            if (g.out_height < 1 || g.out_width < 1) continue;
            INFO((kind == PoolKind::kMax ? "max" : "average")
                 << " input " << ShapeText(in) << " size " << size << " stride " << stride
                 << " batch " << batch);
            ++cases;
            const size_t xs = static_cast<size_t>(batch) * ShapeSize(in);
            const size_t ys = static_cast<size_t>(batch) * g.channels * g.out_height * g.out_width;
            auto x = p.Upload(Quantised(xs, cases));
            auto y = p.Zeros(ys);
            p.cpu.Pool2dForward(g, kind, x.first, batch, y.first, nullptr);
            gpu->Pool2dForward(g, kind, x.second, batch, y.second, nullptr);
            p.ExpectSame(y, ys);
            auto dy = p.Upload(Random(ys, cases + 1));
            auto dx = p.Zeros(xs);
            p.cpu.Pool2dBackward(g, kind, x.first, y.first, nullptr, dy.first, batch, dx.first);
            gpu->Pool2dBackward(g, kind, x.second, y.second, nullptr, dy.second, batch, dx.second);
            p.ExpectSame(dx, xs);
          }
        }
      }
    }
  }
  CHECK(cases > 50);
}

TEST_CASE("CublasBackend: random CNN stacks match the CPU, gradients streamed",
          "[gpu][parity][conv]") {
  // Monsoon's own kernels, then cuDNN where `auto` finds it.
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  std::mt19937 rng(11);
  int built = 0, with_state = 0, with_blocks = 0;
  const auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + rng() % values.size());
  };
  for (int stack = 0; stack < 12; ++stack) {
    ModelSpec spec;
    spec.type = ModelType::kLayers;
    spec.input_shape = {pick({1, 2, 3}), pick({5, 8, 11}), pick({4, 9})};
    spec.input_dim = ShapeSize(spec.input_shape);
    for (int block = pick({1, 2}); block > 0; --block) {
      spec.layers.push_back(Conv(pick({1, 4, 8, 16}), pick({1, 2, 3}), pick({1, 2}),
                                 pick({0, 1}) ? Padding::kSame : Padding::kValid));
      if (pick({0, 1})) spec.layers.push_back(BatchNorm(0.2));
      spec.layers.push_back({pick({0, 1, 2}) == 0   ? LayerKind::kRelu
                             : pick({0, 1}) == 0 ? LayerKind::kTanh
                                                 : LayerKind::kLeakyRelu});
      if (pick({0, 1})) spec.layers.push_back(Pool(LayerKind::kMaxPool2d, 2, pick({1, 2})));
    }
    if (pick({0, 1})) {
      const int filters = pick({2, 8});
      spec.layers.push_back(Residual({Conv(filters, 3, pick({1, 2}), Padding::kSame),
                                      BatchNorm(), {LayerKind::kRelu},
                                      Conv(filters, 3, 1, Padding::kSame)},
                                     Shortcut::kProjection));
    }
    if (pick({0, 1})) spec.layers.push_back(Dropout(0.25));
    spec.layers.push_back({pick({0, 1}) ? LayerKind::kGlobalAvgPool2d : LayerKind::kFlatten});
    if (pick({0, 1})) spec.layers.push_back(BatchNorm());
    spec.layers.push_back({LayerKind::kDense, 3});
    if (!LayerShapes(spec).ok()) continue;  // a window that does not fit: another stack
    spec.output_dim = 3;
    ++built;
    INFO("stack " << stack << ": " << Model::Summary(spec));
    CpuBackend cpu;
    auto [on_cpu, on_gpu, params] = MakeTwins(spec, &cpu, gpu.get(), stack);
    for (const int rows : {7, 1, 16}) {
      const auto x = Random(static_cast<size_t>(rows) * spec.input_dim, stack * 100 + rows);
      std::vector<float> y(rows);
      for (int r = 0; r < rows; ++r) y[r] = static_cast<float>(r % 3);
      on_cpu->set_batch_seed(rows);
      on_gpu->set_batch_seed(rows);
      INFO("batch " << rows);
      ExpectSameStep(on_cpu.get(), on_gpu.get(), x.data(), y.data(), rows, stack % 2 == 0, 1e-5);
      // Evaluating with the running statistics.
      const BatchResult ec = on_cpu->Evaluate(x.data(), y.data(), rows);
      const BatchResult eg = on_gpu->Evaluate(x.data(), y.data(), rows);
      REQUIRE_OK(on_gpu->Synchronize());
      CHECK(eg.loss_sum == Approx(ec.loss_sum).epsilon(1e-4));
    }
    with_state += on_cpu->num_state() > 0;
    with_blocks += std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) {
                     return l.kind == LayerKind::kResidual;
                   });
  }
  CHECK(built >= 6);
  CHECK(with_state >= 3);
  CHECK(with_blocks >= 3);
}

// The copy a worker's push relies on: it finds the first NaN or infinity, whether it copies the
// range itself or unpacks copies started in parts, and copies every bit.
TEST_CASE("CublasBackend: a copy to the host finds the first non-finite value, parts too",
          "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  const size_t n = 1000;
  std::vector<float> host = Random(n, 8);
  DeviceBuffer device = gpu->Allocate(n);
  std::vector<float> out(n);
  gpu->CopyToDevice(host.data(), device.data(), n);
  CHECK(gpu->CopyToHostFindingNonFinite(device.data(), out.data(), n) == n);
  host[700] = std::numeric_limits<float>::infinity();
  host[900] = std::nanf("");
  gpu->CopyToDevice(host.data(), device.data(), n);
  CHECK(gpu->CopyToHostFindingNonFinite(device.data(), out.data(), n) == 700);
  CHECK(std::memcmp(out.data(), host.data(), n * sizeof(float)) == 0);
  // Started as a model streams its layers, the last part first.
  std::fill(out.begin(), out.end(), 0.0f);
  gpu->StartCopyToHost(device.data() + 600, out.data() + 600, n - 600);
  gpu->StartCopyToHost(device.data(), out.data(), 600);
  CHECK(gpu->CopyToHostFindingNonFinite(device.data(), out.data(), n) == 700);
  CHECK(std::memcmp(out.data(), host.data(), n * sizeof(float)) == 0);
  // The same into pinned memory, which the copy engine writes itself (then scanned).
  const HostPin pin = gpu->PinHostMemory(out.data(), n);
  CHECK(pin.pinned());
  std::fill(out.begin(), out.end(), 0.0f);
  CHECK(gpu->CopyToHostFindingNonFinite(device.data(), out.data(), n) == 700);
  CHECK(std::memcmp(out.data(), host.data(), n * sizeof(float)) == 0);
  std::fill(out.begin(), out.end(), 0.0f);
  gpu->StartCopyToHost(device.data() + 600, out.data() + 600, n - 600);
  gpu->StartCopyToHost(device.data(), out.data(), 600);
  CHECK(gpu->CopyToHostFindingNonFinite(device.data(), out.data(), n) == 700);
  CHECK(std::memcmp(out.data(), host.data(), n * sizeof(float)) == 0);
  REQUIRE_OK(gpu->Synchronize());
}

// An upload straight from pinned memory has read it by the time CopyToDevice returns: the
// caller may write its next batch there at once.
TEST_CASE("CublasBackend: an upload from pinned memory is done when it returns", "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  const size_t n = 1000;
  std::vector<float> host = Random(n, 9);
  const std::vector<float> sent = host;
  HostPin pin = gpu->PinHostMemory(host.data(), n);
  CHECK(pin.pinned());
  DeviceBuffer device = gpu->Allocate(n);
  std::vector<float> back(n);
  for (const bool pinned : {true, false}) {
    INFO("pinned " << pinned);
    if (!pinned) pin = HostPin();  // unpinned: the upload stages again
    host = sent;
    gpu->CopyToDevice(host.data(), device.data(), n);
    std::fill(host.begin(), host.end(), 0.0f);
    gpu->CopyToHost(device.data(), back.data(), n);
    REQUIRE_OK(gpu->Synchronize());
    CHECK(back == sent);
  }
}

// An upload started beside compute (StartCopyToDevice) reaches the compute queued after
// AwaitStartedUploads, though only the compute stream is waited for.
TEST_CASE("CublasBackend: a started upload reaches the compute that awaits it", "[gpu][parity]") {
  auto gpu = GpuOrSkip();
  if (gpu == nullptr) return;
  const size_t n = 1000;
  std::vector<float> host = Random(n, 10);
  const bool pinned = GENERATE(true, false);
  INFO("pinned " << pinned);
  const HostPin pin = pinned ? gpu->PinHostMemory(host.data(), n) : HostPin();
  CHECK(pin.pinned() == pinned);
  DeviceBuffer uploaded = gpu->Allocate(n), sum = gpu->Allocate(n);
  gpu->StartCopyToDevice(host.data(), uploaded.data(), n);
  gpu->AwaitStartedUploads();
  gpu->Axpy(1.0f, uploaded.data(), sum.data(), n);
  REQUIRE_OK(gpu->Synchronize());
  std::vector<float> back(n);
  gpu->CopyToHost(sum.data(), back.data(), n);
  REQUIRE_OK(gpu->Synchronize());
  CHECK(back == host);
}

// A CNN's life on the device: create, weights in, three steps (one streamed), gradients and
// weights out. A failed device allocation anywhere in it (the CUDA emulation injects one at
// each in turn) must come back as the model's error, never as a crash or a wrong value
// passed on as right.
TEST_CASE("CublasBackend: a failed allocation is the model's error", "[gpu][alloc]") {
  const std::string cudnn = GENERATE(as<std::string>{}, "off", "auto");
  auto gpu = GpuOrSkip(ComputeConfig().gpu_workspace_mib, Precision::kFp32, cudnn);
  if (gpu == nullptr) return;
  ModelSpec spec;
  spec.type = ModelType::kLayers;
  spec.input_shape = {1, 6, 6};
  spec.input_dim = 36;
  spec.layers = {Conv(4, 3, 1, Padding::kSame), {LayerKind::kRelu},
                 Pool(LayerKind::kMaxPool2d, 2, 2), {LayerKind::kFlatten},
                 {LayerKind::kDense, 3}};
  spec.output_dim = 3;
  auto model = Model::Create(spec, gpu.get());
  REQUIRE(model.ok());
  std::vector<float> params((*model)->num_params());
  Model::InitialValues(spec, 1, 0, absl::MakeSpan(params));
  (*model)->SetParams(params.data());
  std::vector<float> grads(params.size()), after(params.size());
  for (const int rows : {5, 2, 9}) {
    (*model)->StreamGradientsTo(rows == 9 ? grads.data() : nullptr);
    const auto x = Random(static_cast<size_t>(rows) * 36, rows);
    const std::vector<float> y(rows, 1.0f);
    (*model)->ComputeGradients(x.data(), y.data(), rows);
  }
  (*model)->GetGrads(grads.data());
  (*model)->ApplyLocalSgd(0.1f);
  (*model)->GetParams(after.data());
  const absl::Status status = (*model)->Synchronize();
  INFO(status.ToString());
  CHECK((status.ok() || status.message().find("out of memory") != absl::string_view::npos));
  if (status.ok()) {
    for (size_t i = 0; i < after.size(); ++i) REQUIRE(std::isfinite(after[i]));
  }
}

// Where convolutions run is in the backend's name: cuDNN, or Monsoon's own kernels and why.
// With MONSOON_REQUIRE_CUDNN=1, `auto` must find cuDNN. A path that does not load is an error
// that names it.
TEST_CASE("CublasBackend: compute.cudnn_path picks what runs convolutions", "[gpu][parity]") {
  auto automatic = GpuOrSkip();
  if (automatic == nullptr) return;
  std::cout << "layers on: " << automatic->name() << std::endl;
  const char* require = std::getenv("MONSOON_REQUIRE_CUDNN");
  if (require != nullptr && std::string(require) == "1") {
    CHECK(automatic->name().find("; cuDNN 9.") != std::string::npos);
  } else {
    CHECK((automatic->name().find("; cuDNN 9.") != std::string::npos ||
           automatic->name().find("; im2col: ") != std::string::npos));
  }
  CHECK(automatic->name().find("; dense layers on cuBLASLt") != std::string::npos);
  CHECK(GpuOrSkip(1, Precision::kFp32, "off")
            ->name()
            .find("; im2col: compute.cudnn_path is off; dense layers on ") != std::string::npos);
  ComputeConfig compute;
  compute.device = Device::kCuda;
  compute.cudnn_path = *CudnnLibrary::Parse("/nonexistent/cudnn");
  const auto missing = MakeComputeBackend(compute, 0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("compute.cudnn_path /nonexistent/cudnn: ") !=
        std::string::npos);
}

TEST_CASE("MakeComputeBackend: auto always yields a backend; cpu is the CPU", "[gpu]") {
  ComputeConfig compute;
  compute.device = Device::kAuto;
  auto selection = MakeComputeBackend(compute, 0);
  REQUIRE(selection.ok());
  if (selection->backend->name() == "cpu") {
    CHECK(selection->note.rfind("compute.device auto: using the CPU (", 0) == 0);
  }
  if (!std::filesystem::exists("/dev/nvidiactl") &&
      !std::filesystem::exists("/proc/driver/nvidia")) {
    // No driver: auto returns before it would load the CUDA libraries to find out.
    CHECK(selection->note ==
          "compute.device auto: using the CPU (no NVIDIA driver on this machine (no "
          "/dev/nvidiactl))");
  }
  compute.device = Device::kCpu;
  CHECK(MakeComputeBackend(compute, 0)->backend->name() == "cpu");
  compute.device = Device::kCuda;
  auto none = MakeComputeBackend(compute, -1);
  CHECK(absl::IsUnavailable(none.status()));
}

}  // namespace
}  // namespace monsoon
