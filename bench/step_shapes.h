// The models the benchmarks use, and the SGEMMs of one training step of the MLP: the
// reference the compute benchmarks compare a full step against.
#ifndef MONSOON_BENCH_STEP_SHAPES_H_
#define MONSOON_BENCH_STEP_SHAPES_H_

#include <vector>

#include "core/model.h"

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

}  // namespace monsoon

#endif  // MONSOON_BENCH_STEP_SHAPES_H_
