// The models the benchmarks use, and the SGEMMs of one training step of each: the reference
// the compute benchmark compares a full step against.
#ifndef MONSOON_BENCH_STEP_SHAPES_H_
#define MONSOON_BENCH_STEP_SHAPES_H_

#include <vector>

#include "core/model/model.h"

namespace monsoon {

// A flat vector of `floats` zero-initialised parameters (a linear model): what the transport
// and server benchmarks move and update.
inline ModelSpec FlatModel(size_t floats) {
  ModelSpec spec;
  spec.type = ModelType::kLinearRegression;
  spec.input_dim = static_cast<int>(floats - 1);
  spec.output_dim = 1;
  spec.loss = LossType::kMeanSquaredError;
  return spec;
}

// The default job's MLP: 784-256-128-10, ReLU, softmax cross-entropy.
inline ModelSpec BenchmarkMlp() {
  ModelSpec spec;
  spec.input_dim = 784;
  spec.output_dim = 10;
  spec.hidden = {256, 128};
  return spec;
}

// A layer list (to fill in) on 1x28x28 images of 10 classes.
inline ModelSpec FashionMnistLayers() {
  ModelSpec spec;
  spec.type = ModelType::kLayers;
  spec.input_shape = {1, 28, 28};
  spec.input_dim = 784;
  spec.output_dim = 10;
  return spec;
}

// configs/fmnist_cnn.yaml's network: conv 3x3x32 same, ReLU, max-pool 2, conv 3x3x64 same,
// ReLU, max-pool 2, dense 128, ReLU, dense 10 on 1x28x28 images.
inline ModelSpec BenchmarkCnn() {
  ModelSpec spec = FashionMnistLayers();
  LayerSpec conv32, conv64, pool, dense128, dense10;
  conv32.kind = conv64.kind = LayerKind::kConv2d;
  conv32.filters = 32;
  conv64.filters = 64;
  conv32.kernel = conv64.kernel = 3;
  conv32.padding = conv64.padding = Padding::kSame;
  pool.kind = LayerKind::kMaxPool2d;
  pool.size = pool.stride = 2;
  dense128.units = 128;
  dense10.units = 10;
  const LayerSpec relu{LayerKind::kRelu}, flatten{LayerKind::kFlatten};
  spec.layers = {conv32, relu, pool, conv64, relu, pool, flatten, dense128, relu, dense10};
  return spec;
}

// configs/fmnist_resnet.yaml's network: a 3x3 convolution to 16 channels, batchnorm, ReLU;
// three stages of two residual blocks (conv-batchnorm-ReLU-conv-batchnorm, then ReLU) of 16,
// 32 and 64 channels, the first block of stages 2 and 3 halving the size through a 1x1
// projection; global average pooling and a dense layer to 10 classes, on 1x28x28 images.
inline ModelSpec BenchmarkResnet() {
  ModelSpec spec = FashionMnistLayers();
  const auto conv = [](int filters, int stride) {
    LayerSpec c;
    c.kind = LayerKind::kConv2d;
    c.filters = filters;
    c.kernel = 3;
    c.stride = stride;
    c.padding = Padding::kSame;
    return c;
  };
  const LayerSpec bn{LayerKind::kBatchNorm}, relu{LayerKind::kRelu};
  spec.layers = {conv(16, 1), bn, relu};
  for (const int filters : {16, 32, 64}) {
    for (int block = 0; block < 2; ++block) {
      const bool halve = block == 0 && filters > 16;
      LayerSpec residual{LayerKind::kResidual};
      residual.layers = {conv(filters, halve ? 2 : 1), bn, relu, conv(filters, 1), bn};
      residual.shortcut = halve ? Shortcut::kProjection : Shortcut::kIdentity;
      spec.layers.push_back(residual);
      spec.layers.push_back(relu);
    }
  }
  spec.layers.push_back({LayerKind::kGlobalAvgPool2d});
  LayerSpec dense{LayerKind::kDense};
  dense.units = 10;
  spec.layers.push_back(dense);
  return spec;
}

struct GemmShape {
  bool trans_a, trans_b;
  int m, n, k;
};

// For each dense layer (in -> out) of an MLP at batch B: forward x W, then dW = x^T dy and,
// except for the first layer, dx = dy W^T.
inline std::vector<GemmShape> StepGemms(int batch, const ModelSpec& spec) {
  std::vector<int> widths = {spec.input_dim};
  widths.insert(widths.end(), spec.hidden.begin(), spec.hidden.end());
  widths.push_back(spec.output_dim);
  std::vector<GemmShape> shapes;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int in = widths[l], out = widths[l + 1];
    shapes.push_back({false, false, batch, out, in});
    shapes.push_back({true, false, in, out, batch});
    if (l > 0) shapes.push_back({false, true, batch, in, out});
  }
  return shapes;
}

// The SGEMMs of one training step of a layer-list model's dense layers at batch B: forward,
// dW and dx, as StepGemms.
inline std::vector<GemmShape> LayerListGemms(int batch, const ModelSpec& spec) {
  const std::vector<LayerSpec> layers = ModelLayers(spec);
  const std::vector<Shape> shapes = *LayerShapes(spec);
  std::vector<GemmShape> gemms;
  Shape in = spec.input_shape;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Shape& out = shapes[i];
    if (layers[i].kind == LayerKind::kDense) {
      gemms.push_back({false, false, batch, out[0], in[0]});
      gemms.push_back({true, false, in[0], out[0], batch});
      gemms.push_back({false, true, batch, in[0], out[0]});
    }
    in = out;
  }
  return gemms;
}

// A layer-list model's convolutions, those of its residual blocks (a projection last) among
// them, and whether each computes its input's gradient (all but a first layer).
struct ConvolutionStep {
  Conv2dGeometry geometry;
  bool input_gradient;
};
// The oneDNN primitives of one training step of a layer-list model: its convolutions, and its
// batch normalisations of [C, H, W] activations whose channels a native block of `block`
// divides (in that layout; the CPU backend runs the others with loops of its own).
struct PrimitiveSteps {
  std::vector<ConvolutionStep> convolutions;
  std::vector<BatchNormGeometry> batch_norms;
};
inline void AppendPrimitives(const std::vector<LayerSpec>& layers, Shape in, bool first, int block,
                             PrimitiveSteps* steps) {
  const std::vector<Shape> shapes = *LayerListShapes(layers, in, "");
  for (size_t i = 0; i < layers.size(); ++i) {
    const bool input_gradient = !first || i > 0;
    if (layers[i].kind == LayerKind::kConv2d) {
      steps->convolutions.push_back({ConvGeometryOf(layers[i], in), input_gradient});
    } else if (layers[i].kind == LayerKind::kBatchNorm && in.size() == 3 && in[0] % block == 0) {
      BatchNormGeometry g;
      g.channels = in[0];
      g.pixels = in[1] * in[2];
      g.layout = Layout::kNative;
      steps->batch_norms.push_back(g);
    } else if (layers[i].kind == LayerKind::kResidual) {
      AppendPrimitives(layers[i].layers, in, !input_gradient, block, steps);
      if (layers[i].shortcut == Shortcut::kProjection) {
        steps->convolutions.push_back(
            {ConvGeometryOf(ProjectionOf(in, shapes[i]), in), input_gradient});
      }
    }
    in = shapes[i];
  }
}
inline PrimitiveSteps LayerListPrimitives(const ModelSpec& spec, int block) {
  PrimitiveSteps steps;
  AppendPrimitives(ModelLayers(spec), spec.input_shape, true, block, &steps);
  return steps;
}

// The SGEMMs of one training step of a layer-list model on the CUDA backend at batch B: per
// convolution the batch-wide products of core/compute/conv_math.h (y, dw, db and, but for a first
// layer, dcols), then the dense layers' (LayerListGemms).
inline std::vector<GemmShape> CudaLayerListGemms(int batch, const ModelSpec& spec) {
  std::vector<GemmShape> gemms;
  for (const ConvolutionStep& c : LayerListPrimitives(spec, 1).convolutions) {
    const Conv2dGeometry& g = c.geometry;
    const int columns = batch * g.out_height * g.out_width;
    gemms.push_back({false, false, g.filters, columns, g.patch()});
    gemms.push_back({false, true, g.filters, g.patch(), columns});
    gemms.push_back({false, false, g.filters, 1, columns});
    if (c.input_gradient) gemms.push_back({true, false, g.patch(), columns, g.filters});
  }
  const std::vector<GemmShape> dense = LayerListGemms(batch, spec);
  gemms.insert(gemms.end(), dense.begin(), dense.end());
  return gemms;
}

}  // namespace monsoon

#endif  // MONSOON_BENCH_STEP_SHAPES_H_
