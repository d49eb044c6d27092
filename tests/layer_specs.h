// Layer specs for tests, built in one line each.
#ifndef MONSOON_TESTS_LAYER_SPECS_H_
#define MONSOON_TESTS_LAYER_SPECS_H_

#include "core/model/model.h"

namespace monsoon {

// A layer-list model of `layers` on inputs of `shape` with `out` outputs.
inline ModelSpec LayerListModel(const Shape& shape, std::vector<LayerSpec> layers, int out,
                                LossType loss = LossType::kSoftmaxCrossEntropy) {
  ModelSpec spec;
  spec.type = ModelType::kLayers;
  spec.input_shape = shape;
  spec.input_dim = ShapeSize(shape);
  spec.layers = std::move(layers);
  spec.output_dim = out;
  spec.loss = loss;
  return spec;
}

// The `mlp` shorthand: `input` features, dense layers of `hidden` units, `out` outputs.
inline ModelSpec Mlp(int input, std::vector<int> hidden, int out) {
  ModelSpec spec;
  spec.input_dim = input;
  spec.hidden = std::move(hidden);
  spec.output_dim = out;
  return spec;
}

// A layer-list model's `layers`, then a flatten and a dense layer of `out` units.
inline ModelSpec Cnn(const Shape& shape, std::vector<LayerSpec> layers, int out,
                     LossType loss = LossType::kSoftmaxCrossEntropy) {
  layers.push_back({LayerKind::kFlatten});
  layers.push_back({LayerKind::kDense, out});
  return LayerListModel(shape, std::move(layers), out, loss);
}

inline LayerSpec Conv(int filters, int kernel, int stride, Padding padding) {
  LayerSpec l;
  l.kind = LayerKind::kConv2d;
  l.filters = filters;
  l.kernel = kernel;
  l.stride = stride;
  l.padding = padding;
  return l;
}

// kMaxPool2d or kAvgPool2d.
inline LayerSpec Pool(LayerKind kind, int size, int stride) {
  LayerSpec l;
  l.kind = kind;
  l.size = size;
  l.stride = stride;
  return l;
}

inline LayerSpec Dropout(double rate) {
  LayerSpec l;
  l.kind = LayerKind::kDropout;
  l.rate = rate;
  return l;
}

inline LayerSpec BatchNorm(double momentum = 0.1) {
  LayerSpec l;
  l.kind = LayerKind::kBatchNorm;
  l.momentum = momentum;
  return l;
}

inline LayerSpec Residual(std::vector<LayerSpec> layers,
                          Shortcut shortcut = Shortcut::kIdentity) {
  LayerSpec l;
  l.kind = LayerKind::kResidual;
  l.layers = std::move(layers);
  l.shortcut = shortcut;
  return l;
}

}  // namespace monsoon

#endif  // MONSOON_TESTS_LAYER_SPECS_H_
