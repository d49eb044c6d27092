// The batchnorm layer: its gradients, its running statistics as model state, and how the
// model treats state (last in the flat vector, pushed as values, never stepped).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/compute/cpu/cpu_backend.h"
#include "core/model/model.h"
#include "tests/gradient_check.h"
#include "tests/layer_specs.h"

namespace monsoon {
namespace {

// A batchnorm layer "bn0" on `g`, with its declaration's tensors.
std::unique_ptr<BatchNormLayer> BatchNormOn(const BatchNormGeometry& g) {
  const Shape in = {g.channels};
  return std::make_unique<BatchNormLayer>(
      DeclOf(LayerKind::kBatchNorm).tensors(BatchNorm(), in, in, "bn0"), "bn0", g);
}

TEST_CASE("batchnorm: model gradients match finite differences while training",
          "[core][batchnorm]") {
  const LayerSpec relu{LayerKind::kRelu}, flatten{LayerKind::kFlatten};
  // After a convolution (per channel over the pixels), then a dense layer (per value).
  CheckGradients(LayerListModel({2, 5, 4},
                        {Conv(3, 3, 1, Padding::kSame), BatchNorm(), relu,
                         Pool(LayerKind::kMaxPool2d, 2, 2), flatten, {LayerKind::kDense, 5},
                         BatchNorm(0.3), {LayerKind::kTanh}, {LayerKind::kDense, 3}},
                        3),
                 21);
}

TEST_CASE("batchnorm: layer gradients match finite differences, training and evaluating",
          "[core][batchnorm]") {
  BatchNormGeometry spatial;
  spatial.channels = 3;
  spatial.pixels = 6;
  BatchNormGeometry flat;
  flat.channels = 5;
  // In the CPU's native layout (oneDNN's primitive), with and without a fused ReLU.
  BatchNormGeometry native;
  native.channels = 16;
  native.pixels = 6;
  native.layout = Layout::kNative;
  BatchNormGeometry native_relu = native;
  native_relu.relu = FusedRelu::kOnOutput;
  for (const BatchNormGeometry& g : {spatial, flat, native, native_relu}) {
    for (const bool training : {true, false}) {
      const std::unique_ptr<BatchNormLayer> layer = BatchNormOn(g);
      std::vector<float> state(2 * g.channels);
      for (int c = 0; c < g.channels; ++c) {
        state[c] = 0.1f * c;                   // running mean
        state[g.channels + c] = 0.5f + 0.2f * c;  // running variance
      }
      CheckLayerGradients(*layer, 4, training, 17, state);
    }
  }
}

TEST_CASE("batchnorm: running statistics move as PyTorch's, by the unbiased variance",
          "[core][batchnorm]") {
  BatchNormGeometry g;
  g.channels = 2;
  g.momentum = 0.25f;
  const std::unique_ptr<BatchNormLayer> bn = BatchNormOn(g);
  BatchNormLayer& layer = *bn;
  std::vector<float> params = {1, 1, 0, 0}, grads(4), state = {0, 0, 1, 1};
  layer.Bind(params.data(), grads.data(), state.data());
  // Channel 0: 1, 2, 3, 6 (mean 3, unbiased variance 14 / 3); channel 1: all 5.
  const std::vector<float> x = {1, 5, 2, 5, 3, 5, 6, 5};
  std::vector<float> y(8);
  CpuBackend backend;
  layer.SetMode(true, 0);
  layer.Forward(backend, x.data(), 4, y.data());
  CHECK(state[0] == Approx(0.75f * 0 + 0.25f * 3));
  CHECK(state[1] == Approx(0.25f * 5));
  CHECK(state[2] == Approx(0.75f * 1 + 0.25f * 14.0f / 3));
  CHECK(state[3] == Approx(0.75f * 1));
  // Normalised by the batch's biased variance (3.5): (1 - 3) / sqrt(3.5 + 1e-5).
  CHECK(y[0] == Approx(-2 / std::sqrt(3.5 + 1e-5)));
  CHECK(y[1] == 0.0f);
  // Evaluating uses the running statistics and leaves them.
  const std::vector<float> kept = state;
  layer.SetMode(false, 0);
  layer.Forward(backend, x.data(), 4, y.data());
  CHECK(state == kept);
  CHECK(y[0] == Approx((1 - kept[0]) / std::sqrt(kept[2] + 1e-5)));
}

TEST_CASE("batchnorm: state lies last in the flat vector, pushed as values, never stepped",
          "[core][batchnorm]") {
  const ModelSpec spec =
      LayerListModel({4}, {{LayerKind::kDense, 3}, BatchNorm(), {LayerKind::kDense, 2}}, 2);
  const std::vector<ParamTensor> layout = Model::Layout(spec);
  REQUIRE(layout.size() == 8);
  CHECK(layout[2].shape.name == "bn0.weight");
  CHECK(layout[6].shape.name == "bn0.running_mean");
  CHECK(layout[6].state);
  CHECK(layout[7].shape.name == "bn0.running_var");
  CHECK_FALSE(layout[5].state);
  const size_t n = Model::NumParams(spec);
  CHECK(Model::NumState(spec) == 6);
  CHECK(layout[6].offset == n - 6);
  std::vector<float> params(n);
  Model::InitialValues(spec, 3, 0, absl::MakeSpan(params));
  CHECK(params[layout[2].offset] == 1.0f);  // gamma
  CHECK(params[layout[3].offset] == 0.0f);  // beta
  CHECK(params[n - 6] == 0.0f);             // running mean
  CHECK(params[n - 1] == 1.0f);             // running variance

  CpuBackend backend;
  auto model = Model::Create(spec, &backend);
  REQUIRE(model.ok());
  CHECK((*model)->num_state() == 6);
  (*model)->SetParams(params.data());
  const std::vector<float> x = {1, 2, 3, 4, -1, 0, 2, 1, 0.5f, 0.5f, 3, -2};
  const std::vector<float> labels = {0, 1, 1};
  (*model)->ComputeGradients(x.data(), labels.data(), 3);
  std::vector<float> after(n), pushed(n);
  (*model)->GetParams(after.data());
  CHECK((*model)->GetGrads(pushed.data()) == n);  // nothing non-finite
  CHECK(after[n - 6] != 0.0f);  // the running mean moved
  for (size_t i = n - 6; i < n; ++i) CHECK(pushed[i] == after[i]);
  (*model)->AddWeightDecay(0.5f);
  (*model)->ApplyLocalSgd(0.1f);
  (*model)->ApplyLocalNesterov(0.1f, 0.9f);
  std::vector<float> stepped(n);
  (*model)->GetParams(stepped.data());
  CHECK(stepped[0] != after[0]);
  for (size_t i = n - 6; i < n; ++i) CHECK(stepped[i] == after[i]);

  // A non-finite state value is found too (the last running variance; training never reads it).
  params[n - 1] = std::numeric_limits<float>::infinity();
  (*model)->SetParams(params.data());
  (*model)->ComputeGradients(x.data(), labels.data(), 3);
  CHECK((*model)->GetGrads(pushed.data()) == n - 1);
}

TEST_CASE("batchnorm: evaluating with the batch's statistics as running ones scores as training",
          "[core][batchnorm]") {
  const ModelSpec spec = LayerListModel({3}, {BatchNorm(), {LayerKind::kDense, 2}}, 2);
  const std::vector<float> x = {1, 2, 3, 4, -1, 0, 2, 1, 0.5f, 0, 3, -2};
  const std::vector<float> labels = {0, 1, 1, 0};
  std::vector<float> params(Model::NumParams(spec));
  Model::InitialValues(spec, 5, 0, absl::MakeSpan(params));
  const size_t n = params.size();
  for (int c = 0; c < 3; ++c) {
    double mean = 0, squares = 0;
    for (int r = 0; r < 4; ++r) mean += x[r * 3 + c] / 4.0;
    for (int r = 0; r < 4; ++r) squares += std::pow(x[r * 3 + c] - mean, 2) / 4.0;
    params[n - 6 + c] = static_cast<float>(mean);
    params[n - 3 + c] = static_cast<float>(squares);  // biased, as training normalises
  }
  CpuBackend backend;
  auto model = Model::Create(spec, &backend);
  REQUIRE(model.ok());
  (*model)->SetParams(params.data());
  const double evaluated = (*model)->Evaluate(x.data(), labels.data(), 4).loss_sum;
  const double trained = (*model)->ComputeGradients(x.data(), labels.data(), 4).loss_sum;
  CHECK(evaluated == Approx(trained).epsilon(1e-5));
  (*model)->SetParams(params.data());
  params[n - 1] = 9.0f;
  (*model)->SetParams(params.data());
  CHECK((*model)->Evaluate(x.data(), labels.data(), 4).loss_sum != Approx(evaluated));
}

}  // namespace
}  // namespace monsoon
