// Residual blocks: their gradients (the block alone and in a model, training and evaluating),
// their layout of parameters and state, and their output.
#include <catch2/catch.hpp>
#include <vector>

#include "core/compute/cpu/cpu_backend.h"
#include "core/model/model.h"
#include "tests/gradient_check.h"
#include "tests/layer_specs.h"

namespace monsoon {
namespace {

// The block a model builds for `block` on input `in`.
std::unique_ptr<Layer> BuildBlock(const LayerSpec& block, const Shape& in) {
  std::vector<std::unique_ptr<Layer>> built = BuildLayerList({block}, in, 0, Layout::kPlain, "", nullptr);
  REQUIRE(built.size() == 1);
  return std::move(built[0]);
}

const LayerSpec kRelu{LayerKind::kRelu};

TEST_CASE("residual: model gradients match finite differences, identity and projection",
          "[core][residual]") {
  CheckGradients(
      Cnn({2, 5, 4},
             {Conv(3, 3, 1, Padding::kSame), kRelu,
              Residual({Conv(3, 3, 1, Padding::kSame), BatchNorm(), kRelu,
                        Conv(3, 3, 1, Padding::kSame)}),
              kRelu,
              Residual({Conv(4, 3, 2, Padding::kSame), BatchNorm(), kRelu}, Shortcut::kProjection),
              {LayerKind::kGlobalAvgPool2d}},
             3),
      31);
  // A block as the model's first layer (its input gradient is not needed), on a flat input.
  CheckGradients(Cnn({6}, {Residual({{LayerKind::kDense, 6}, {LayerKind::kTanh}})}, 2), 5);
}

TEST_CASE("residual: a block's gradients match finite differences, training and evaluating",
          "[core][residual]") {
  const Shape in = {2, 4, 3};
  const LayerSpec blocks[] = {
      Residual({Conv(2, 3, 1, Padding::kSame), BatchNorm(), kRelu, Conv(2, 1, 1, Padding::kSame)}),
      Residual({Conv(3, 3, 2, Padding::kSame), BatchNorm()}, Shortcut::kProjection)};
  for (const LayerSpec& spec : blocks) {
    for (const bool training : {true, false}) {
      std::unique_ptr<Layer> block = BuildBlock(spec, in);
      std::vector<float> state(2 * 3, 1.0f);  // running means of 1, variances of 1
      CheckLayerGradients(*block, 3, training, 23, state);
    }
  }
}

TEST_CASE("residual: y = layers(x) + x, or + the projection, with named tensors",
          "[core][residual]") {
  const ModelSpec spec =
      Cnn({1, 2, 2}, {Residual({Conv(2, 1, 1, Padding::kValid)}, Shortcut::kProjection)}, 2);
  const std::vector<ParamTensor> layout = Model::Layout(spec);
  REQUIRE(layout.size() == 6);
  CHECK(layout[0].shape.name == "res0.conv0.weight");
  CHECK(layout[2].shape.name == "res0.shortcut.weight");
  CHECK(layout[4].shape.name == "dense0.weight");
  // One pixel's channel c: conv weight w_c x + b_c plus projection v_c x + d_c.
  std::unique_ptr<Layer> block = BuildBlock(spec.layers[0], {1, 2, 2});
  std::vector<float> params = {2, 3, 0.5f, -1, 10, 20, 1, 2}, grads(8);
  block->Bind(params.data(), grads.data(), nullptr);
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> y(8);
  CpuBackend backend;
  block->Forward(backend, x.data(), 1, y.data());
  for (int p = 0; p < 4; ++p) {
    CHECK(y[p] == Approx(2 * x[p] + 0.5f + 10 * x[p] + 1));
    CHECK(y[4 + p] == Approx(3 * x[p] - 1 + 20 * x[p] + 2));
  }
}

TEST_CASE("residual: the layout is the declarations', and what the built layers bind",
          "[core][residual]") {
  const ModelSpec spec = Cnn(
      {4, 6, 6},
      {Conv(8, 3, 1, Padding::kSame), BatchNorm(), kRelu,
       Residual({Conv(8, 3, 1, Padding::kSame), BatchNorm(), kRelu, Conv(8, 3, 1, Padding::kSame),
                 BatchNorm()}),
       kRelu, Residual({Conv(16, 3, 2, Padding::kSame), BatchNorm()}, Shortcut::kProjection)},
      10);
  const std::vector<ParamTensor> layout = Model::Layout(spec);
  // Native channel blocks plan other layers (fused ReLUs) over the same tensors.
  for (const int block : {0, 8}) {
    std::vector<ParamShape> bound;
    for (const bool state : {false, true}) {
      for (const auto& layer :
           BuildLayerList(spec.layers, spec.input_shape, block, Layout::kPlain, "", nullptr)) {
        for (const ParamShape& p : state ? layer->state_shapes() : layer->param_shapes()) {
          bound.push_back(p);
        }
      }
    }
    REQUIRE(bound.size() == layout.size());
    for (size_t i = 0; i < layout.size(); ++i) {
      CHECK(bound[i].name == layout[i].shape.name);
      CHECK(bound[i].dims == layout[i].shape.dims);
    }
  }
  CHECK(layout[4].shape.name == "res0.conv0.weight");
  CHECK(layout[16].shape.name == "res1.shortcut.weight");
  CHECK(layout[18].shape.name == "dense0.weight");
  CHECK(layout[20].shape.name == "bn0.running_mean");
  CHECK(layout[22].shape.name == "res0.bn0.running_mean");
  CHECK(layout.back().shape.name == "res1.bn0.running_var");
}

}  // namespace
}  // namespace monsoon
