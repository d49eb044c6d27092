#include "core/model/model.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "core/compute/cpu/cpu_backend.h"
#include "tests/gradient_check.h"
#include "tests/layer_specs.h"

namespace monsoon {
namespace {

TEST_CASE("Model: the mlp shorthand is the layer list it stands for", "[core][model]") {
  ModelSpec mlp;
  mlp.type = ModelType::kMlp;
  mlp.input_shape = {1, 3, 3};
  mlp.input_dim = 9;
  mlp.output_dim = 4;
  mlp.hidden = {5};
  mlp.activation = Activation::kSigmoid;
  ModelSpec layers = mlp;
  layers.type = ModelType::kLayers;
  layers.hidden.clear();
  layers.layers = {{LayerKind::kFlatten, 0},
                   {LayerKind::kDense, 5},
                   {LayerKind::kSigmoid, 0},
                   {LayerKind::kDense, 4}};
  CHECK(ModelLayers(mlp) == layers.layers);
  CHECK(Model::Summary(mlp) == Model::Summary(layers));
  const auto a = Model::Layout(mlp), b = Model::Layout(layers);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].shape.name == b[i].shape.name);
    CHECK(a[i].offset == b[i].offset);
  }
  CHECK(Model::Summary(layers).rfind("layer           output shape  parameters\n"
                                     "flatten         (9)           0\n",
                                     0) == 0);
}

TEST_CASE("Model::Summary: a row per layer with its output shape and parameters, then the total",
          "[core][model]") {
  ModelSpec spec;
  spec.type = ModelType::kMlp;
  spec.input_dim = 784;
  spec.output_dim = 10;
  spec.hidden = {256, 128};
  spec.activation = Activation::kTanh;
  CHECK(Model::Summary(spec) ==
        "layer           output shape  parameters\n"
        "dense0 (dense)  (256)         200960\n"
        "tanh            (256)         0\n"
        "dense1 (dense)  (128)         32896\n"
        "tanh            (128)         0\n"
        "dense2 (dense)  (10)          1290\n"
        "total                         235146\n");
}

TEST_CASE("Model: MLP gradients match finite differences for every activation", "[core][model]") {
  for (Activation a : {Activation::kRelu, Activation::kTanh, Activation::kSigmoid}) {
    ModelSpec spec;
    spec.type = ModelType::kMlp;
    spec.input_dim = 5;
    spec.output_dim = 4;
    spec.hidden = {7, 6};
    spec.activation = a;
    CheckGradients(spec, 3);
  }
}

// A layer-list spec over input `shape` ending in `out` dense units.
TEST_CASE("Model: convolution and pooling gradients match finite differences, odd shapes",
          "[core][model][conv]") {
  // Strided `same` convolution of a 2-channel 7x5 input, overlapping average pooling, a
  // `valid` 2x2 convolution: every layer's input gradient feeds the first layer's weights.
  const ModelSpec a = Cnn({2, 7, 5},
                          {Conv(3, 3, 2, Padding::kSame),
                           {LayerKind::kRelu},
                           Pool(LayerKind::kAvgPool2d, 2, 1),
                           Conv(4, 2, 1, Padding::kValid),
                           {LayerKind::kTanh}},
                          3, LossType::kSoftmaxCrossEntropy);
  REQUIRE(LayerShapes(a).ok());
  CHECK(LayerShapes(a)->at(0) == Shape{3, 4, 3});
  CHECK(LayerShapes(a)->at(2) == Shape{3, 3, 2});
  CHECK(LayerShapes(a)->at(3) == Shape{4, 2, 1});
  CheckGradients(a, 11);
  // Max pooling, a 1x1 convolution, regression.
  const ModelSpec b = Cnn({1, 6, 6},
                          {Conv(2, 3, 1, Padding::kValid),
                           {LayerKind::kSigmoid},
                           Pool(LayerKind::kMaxPool2d, 2, 2),
                           Conv(3, 1, 1, Padding::kSame)},
                          2, LossType::kMeanSquaredError);
  CHECK(LayerShapes(b)->at(2) == Shape{2, 2, 2});
  CheckGradients(b, 5);
  // Average pooling that tiles its input, overlapping max pooling, max pooling that leaves the
  // last row and column out.
  const ModelSpec c = Cnn({2, 9, 9},
                          {Conv(3, 2, 1, Padding::kValid), Pool(LayerKind::kAvgPool2d, 2, 2),
                           Conv(2, 1, 1, Padding::kSame), Pool(LayerKind::kMaxPool2d, 2, 1),
                           Pool(LayerKind::kMaxPool2d, 2, 2)},
                          2, LossType::kSoftmaxCrossEntropy);
  CHECK(LayerShapes(c)->at(1) == Shape{3, 4, 4});
  CHECK(LayerShapes(c)->at(4) == Shape{2, 1, 1});
  CheckGradients(c, 7);
  // Global average pooling of a non-square map, after a ReLU.
  const ModelSpec d = Cnn({2, 5, 7},
                          {Conv(4, 3, 1, Padding::kSame),
                           {LayerKind::kRelu},
                           {LayerKind::kGlobalAvgPool2d}},
                          3, LossType::kSoftmaxCrossEntropy);
  CHECK(LayerShapes(d)->at(2) == Shape{4});
  CheckGradients(d, 9);
  // Leaky ReLU with a steep slope between a convolution and max pooling.
  LayerSpec leaky{LayerKind::kLeakyRelu};
  leaky.slope = 0.3;
  const ModelSpec e = Cnn({1, 6, 5},
                          {Conv(3, 2, 1, Padding::kSame), leaky, Pool(LayerKind::kMaxPool2d, 2, 2)},
                          2, LossType::kSoftmaxCrossEntropy);
  CheckGradients(e, 13);
  // The activations whose gradient needs their input, after a convolution and a dense layer.
  const ModelSpec f = Cnn({1, 5, 5},
                          {Conv(2, 3, 1, Padding::kSame),
                           {LayerKind::kGelu},
                           {LayerKind::kFlatten},
                           {LayerKind::kDense, 6},
                           {LayerKind::kSilu},
                           {LayerKind::kDense, 4},
                           {LayerKind::kGeluTanh}},
                          4, LossType::kSoftmaxCrossEntropy);
  CheckGradients(f, 17);
}

// CNNs whose convolution activations stay in the CPU's native (blocked) layout: 16 filters
// and 32, so that a channel block of 8 or 16 divides them. Between them, a ReLU fused into its
// convolution is followed by max pooling whose windows tile the input and whose windows do not,
// by average pooling and by a convolution; and a dropout follows the flatten. The third is a
// small ResNet: batchnorm with a fused ReLU before max pooling and inside residual blocks
// (identity and projection shortcuts), up to the global average pooling.
std::vector<ModelSpec> NativeCnns() {
  const LayerSpec relu{LayerKind::kRelu};
  ModelSpec tiling = Cnn({3, 12, 12},
                         {Conv(16, 3, 1, Padding::kSame),
                          relu,
                          Pool(LayerKind::kMaxPool2d, 2, 2),
                          Conv(16, 3, 1, Padding::kSame),
                          relu,
                          Conv(32, 3, 1, Padding::kSame),
                          {LayerKind::kTanh},
                          Pool(LayerKind::kMaxPool2d, 2, 2)},
                         5, LossType::kSoftmaxCrossEntropy);
  tiling.layers.insert(tiling.layers.end() - 1, Dropout(0.25));
  const ModelSpec other =
      Cnn({3, 13, 12},
          {Conv(16, 3, 1, Padding::kSame), relu, Pool(LayerKind::kMaxPool2d, 2, 2),
           Conv(32, 3, 1, Padding::kSame), relu, Pool(LayerKind::kAvgPool2d, 2, 1),
           Pool(LayerKind::kMaxPool2d, 2, 1)},
          5, LossType::kSoftmaxCrossEntropy);
  const ModelSpec resnet = Cnn(
      {3, 8, 8},
      {Conv(16, 3, 1, Padding::kSame), BatchNorm(), relu, Pool(LayerKind::kMaxPool2d, 2, 2),
       Residual({Conv(16, 3, 1, Padding::kSame), BatchNorm(), relu,
                 Conv(16, 3, 1, Padding::kSame), BatchNorm()}),
       relu,
       Residual({Conv(32, 3, 2, Padding::kSame), BatchNorm(), relu,
                 Conv(32, 3, 1, Padding::kSame), BatchNorm()},
                Shortcut::kProjection),
       relu, {LayerKind::kGlobalAvgPool2d}},
      5, LossType::kSoftmaxCrossEntropy);
  return {tiling, other, resnet};
}

TEST_CASE("Model: gradients match finite differences with activations in the native layout",
          "[core][model][conv]") {
  REQUIRE(CpuBackend().NativeChannelBlock() > 0);
  for (const ModelSpec& spec : NativeCnns()) CheckGradients(spec, 3);
}

// Counts layout conversions.
class ConvertCountingBackend : public CpuBackend {
 public:
  using CpuBackend::CpuBackend;
  void ConvertLayout(int channels, int height, int width, int batch, bool to_native, const float* x,
                     float* y) override {
    ++conversions;
    CpuBackend::ConvertLayout(channels, height, width, batch, to_native, x, y);
  }
  int conversions = 0;
};

TEST_CASE("Model: native and plain layouts compute the same loss and gradients",
          "[core][model][conv]") {
  for (const ModelSpec& spec : NativeCnns()) {
    const int rows = 7;
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> x(rows * spec.input_dim), y(rows), params(Model::NumParams(spec));
    for (float& v : x) v = u(rng);
    for (int r = 0; r < rows; ++r) y[r] = static_cast<float>(r % 5);
    Model::InitialValues(spec, 9, 0, absl::MakeSpan(params));
    std::vector<std::vector<float>> grads;
    std::vector<double> losses;
    for (const bool native : {true, false}) {
      ConvertCountingBackend backend(1, native);
      auto model = Model::Create(spec, &backend);
      REQUIRE(model.ok());
      (*model)->SetParams(params.data());
      losses.push_back((*model)->ComputeGradients(x.data(), y.data(), rows).loss_sum);
      grads.emplace_back((*model)->num_params());
      (*model)->GetGrads(grads.back().data());
      // Native: the flatten (or the global pooling) converts forward and back; plain: nothing
      // converts.
      CHECK(backend.conversions == (native ? 2 : 0));
    }
    CHECK(losses[0] == Approx(losses[1]).epsilon(1e-5));
    for (size_t i = 0; i < grads[0].size(); ++i) {
      INFO("gradient " << i);
      CHECK(grads[0][i] == Approx(grads[1][i]).margin(1e-5).epsilon(1e-4));
    }
  }
}

TEST_CASE("Model: dropout masks train by the batch seed and are off when evaluating",
          "[core][model][conv]") {
  ModelSpec spec = Cnn({2, 3, 3}, {Conv(3, 2, 1, Padding::kSame), Dropout(0.5)}, 2,
                       LossType::kSoftmaxCrossEntropy);
  CheckGradients(spec, 7);
  // Evaluating, the model is the same model without its dropout layer.
  ModelSpec without =
      Cnn({2, 3, 3}, {Conv(3, 2, 1, Padding::kSame)}, 2, LossType::kSoftmaxCrossEntropy);
  CpuBackend backend;
  auto a = Model::Create(spec, &backend), b = Model::Create(without, &backend);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<float> params((*a)->num_params());
  Model::InitialValues(spec, 3, 0, absl::MakeSpan(params));
  (*a)->SetParams(params.data());
  (*b)->SetParams(params.data());
  std::vector<float> x(18 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  const std::vector<float> labels = {0, 1, 1, 0};
  CHECK((*a)->Evaluate(x.data(), labels.data(), 4).loss_sum ==
        (*b)->Evaluate(x.data(), labels.data(), 4).loss_sum);
  // Training, the loss depends on the batch seed, and the same seed gives the same loss.
  (*a)->set_batch_seed(1);
  const double one = (*a)->ComputeGradients(x.data(), labels.data(), 4).loss_sum;
  (*a)->set_batch_seed(2);
  const double two = (*a)->ComputeGradients(x.data(), labels.data(), 4).loss_sum;
  (*a)->set_batch_seed(1);
  CHECK((*a)->ComputeGradients(x.data(), labels.data(), 4).loss_sum == one);
  CHECK(one != two);
}

TEST_CASE("Model: a convolution's output is the direct sum over its window",
          "[core][model][conv]") {
  // One 3x3 input, one 2x2 filter [[1, 2], [3, 4]], bias 0.5, `same` padding (below and right).
  ModelSpec spec = Cnn({1, 3, 3}, {Conv(1, 2, 1, Padding::kSame)}, 1, LossType::kMeanSquaredError);
  CpuBackend backend;
  auto model = Model::Create(spec, &backend);
  REQUIRE(model.ok());
  std::vector<float> params((*model)->num_params(), 0.0f);
  const std::vector<float> filter = {1, 2, 3, 4};
  std::copy(filter.begin(), filter.end(), params.begin());
  params[4] = 0.5f;  // conv bias; the dense layer's weights: pick out pixel (1, 1)
  params[5 + 4] = 1.0f;
  (*model)->SetParams(params.data());
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> target = {0};
  const BatchResult r = (*model)->Evaluate(x.data(), target.data(), 1);
  // Output (1, 1) = 5*1 + 6*2 + 8*3 + 9*4 + 0.5 = 77.5; the loss is ½ 77.5².
  CHECK(r.loss_sum == Approx(0.5 * 77.5 * 77.5));
}

TEST_CASE("Model: softmax and linear regression gradients match finite differences",
          "[core][model]") {
  ModelSpec softmax;
  softmax.type = ModelType::kSoftmaxRegression;
  softmax.input_dim = 4;
  softmax.output_dim = 3;
  CheckGradients(softmax, 5);
  ModelSpec linear;
  linear.type = ModelType::kLinearRegression;
  linear.input_dim = 3;
  linear.output_dim = 2;
  linear.loss = LossType::kMeanSquaredError;
  CheckGradients(linear, 7);
}

TEST_CASE("Model: flat layout is contiguous, and initial values of any range match the whole",
          "[core][model]") {
  ModelSpec spec;
  spec.input_dim = 784;
  spec.output_dim = 10;
  spec.hidden = {256, 128};
  const auto layout = Model::Layout(spec);
  REQUIRE(layout.size() == 6);
  size_t offset = 0;
  for (const ParamTensor& t : layout) {
    CHECK(t.offset == offset);
    offset += t.shape.size();
  }
  CHECK(offset == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  std::vector<float> whole(offset);
  Model::InitialValues(spec, 42, 0, absl::MakeSpan(whole));
  std::vector<float> part(1000);
  Model::InitialValues(spec, 42, 200500, absl::MakeSpan(part));
  for (size_t i = 0; i < part.size(); ++i) CHECK(part[i] == whole[200500 + i]);
  CHECK(whole[layout[1].offset] == 0.0f);  // biases start at zero
  CHECK(whole[0] != 0.0f);
}

// The model of `spec` on `backend`, its initial weights (seed 3) set.
std::unique_ptr<Model> WithInitialWeights(const ModelSpec& spec, ComputeBackend* backend) {
  auto model = Model::Create(spec, backend);
  REQUIRE(model.ok());
  std::vector<float> params((*model)->num_params());
  Model::InitialValues(spec, 3, 0, absl::MakeSpan(params));
  (*model)->SetParams(params.data());
  return *std::move(model);
}

TEST_CASE("Model: GetGrads returns where its copy met the first non-finite value",
          "[core][model]") {
  CpuBackend backend;
  const ModelSpec spec = Mlp(4, {5}, 3);
  const std::unique_ptr<Model> model = WithInitialWeights(spec, &backend);
  const size_t n = model->num_params();
  std::vector<float> x(2 * 4, 0.5f);
  const std::vector<float> y = {0, 2};
  x[1] = std::numeric_limits<float>::quiet_NaN();
  model->ComputeGradients(x.data(), y.data(), 2);
  std::vector<float> grads(n);
  const size_t first = model->GetGrads(grads.data());
  REQUIRE(first < grads.size());
  CHECK(std::isnan(grads[first]));
  for (size_t i = 0; i < first; ++i) CHECK(std::isfinite(grads[i]));
}

TEST_CASE("Model: bad dimensions are rejected", "[core][model]") {
  CpuBackend backend;
  ModelSpec spec;
  spec.input_dim = 0;
  spec.output_dim = 3;
  CHECK(absl::IsInvalidArgument(Model::Create(spec, &backend).status()));
}

// A CPU backend that says its memory is apart from the host's, as a GPU's is.
class SeparateMemoryBackend : public CpuBackend {
 public:
  bool separate_memory() const override { return true; }
};

TEST_CASE("Model: batches gathered from held rows train as the same batches uploaded",
          "[core][model]") {
  const ModelSpec spec = Mlp(6, {5}, 3);
  std::vector<float> features(20 * 6), targets(20);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : features) v = u(rng);
  for (int r = 0; r < 20; ++r) targets[r] = static_cast<float>(r % 3);
  const size_t bytes = (features.size() + targets.size()) * sizeof(float);

  CpuBackend cpu;
  CHECK_FALSE(WithInitialWeights(spec, &cpu)->HoldRows(features, targets, bytes));
  SeparateMemoryBackend separate;
  const std::unique_ptr<Model> held = WithInitialWeights(spec, &separate);
  const std::unique_ptr<Model> uploaded = WithInitialWeights(spec, &separate);
  CHECK_FALSE(held->HoldRows(features, targets, bytes - 1));  // over the budget
  REQUIRE(held->HoldRows(features, targets, bytes));

  const std::vector<uint32_t> rows = {17, 3, 3, 0, 19, 8};
  std::vector<float> x, y;
  for (const uint32_t r : rows) {
    x.insert(x.end(), features.begin() + 6 * r, features.begin() + 6 * (r + 1));
    y.push_back(targets[r]);
  }
  const BatchResult a = held->ComputeGradientsOnHeld(rows);
  const BatchResult b = uploaded->ComputeGradients(x.data(), y.data(), 6);
  CHECK(a.loss_sum == b.loss_sum);
  CHECK(a.correct == b.correct);
  CHECK(a.rows == 6);
  std::vector<float> ga(held->num_params()), gb(ga.size());
  held->GetGrads(ga.data());
  uploaded->GetGrads(gb.data());
  CHECK(ga == gb);
}

// A CPU backend that records which gradient ranges backward starts towards the host.
class RecordingBackend : public CpuBackend {
 public:
  void StartCopyToHost(const float* device, float* host, size_t n) override {
    started.push_back({device, n});
    hosts.push_back(host);
  }
  std::vector<std::pair<const float*, size_t>> started;
  std::vector<float*> hosts;
};

TEST_CASE("Model: streamed gradients start layer by layer, last layer first, tiling the vector",
          "[core][model]") {
  RecordingBackend backend;
  const ModelSpec spec = Mlp(6, {5, 4}, 3);
  const std::unique_ptr<Model> model = WithInitialWeights(spec, &backend);
  const size_t n = model->num_params();
  const std::vector<float> x(2 * 6, 0.5f), y = {0, 2};
  model->ComputeGradients(x.data(), y.data(), 2);
  CHECK(backend.started.empty());  // off by default
  std::vector<float> copied(n), streamed(n);
  CHECK(model->GetGrads(copied.data()) == n);  // every value finite

  model->StreamGradientsTo(streamed.data());
  model->ComputeGradients(x.data(), y.data(), 2);
  model->GetGrads(streamed.data());
  CHECK(streamed == copied);
  // Each range to its place in the destination.
  for (size_t i = 0; i < backend.started.size(); ++i) {
    CHECK(backend.hosts[i] - streamed.data() ==
          backend.started[i].first - backend.started[2].first);
  }
  // [W1 b1][W2 b2][W3 b3] = 35 + 24 + 15 floats, started from the last layer.
  REQUIRE(backend.started.size() == 3);
  CHECK(backend.started[0].second == 4 * 3 + 3);
  CHECK(backend.started[1].second == 5 * 4 + 4);
  CHECK(backend.started[2].second == 6 * 5 + 5);
  CHECK(backend.started[2].first + backend.started[2].second == backend.started[1].first);
  CHECK(backend.started[1].first + backend.started[1].second == backend.started[0].first);
  CHECK(backend.started[0].second + backend.started[1].second + backend.started[2].second == n);
}

}  // namespace
}  // namespace monsoon
