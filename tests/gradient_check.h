// Finite-difference checks of gradients, for tests of models and layers.
#ifndef MONSOON_TESTS_GRADIENT_CHECK_H_
#define MONSOON_TESTS_GRADIENT_CHECK_H_

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/compute/cpu/cpu_backend.h"
#include "core/model/model.h"

namespace monsoon {

// Whether `analytic` lies between the one-sided slopes `down` and `up`, give or take a
// tolerance: where the function is smooth the two agree; where a kink lies within the step (a
// ReLU or a max window changing hands) the gradient is one of them.
inline void CheckSlope(double analytic, double down, double up) {
  const double tolerance = 2e-3 + 2e-2 * std::abs(analytic);
  CHECK(analytic >= std::min(up, down) - tolerance);
  CHECK(analytic <= std::max(up, down) + tolerance);
}

// Finite differences of the batch-mean loss against the analytic gradient, on a sample of
// coordinates of every tensor: the gradient must lie between the two one-sided slopes, give or
// take a tolerance. Where the loss is smooth the two agree; where a kink lies within h (a ReLU
// or a max window changing hands) the gradient is one of them.
inline void CheckGradients(const ModelSpec& spec, uint64_t seed) {
  CpuBackend backend;
  auto model_or = Model::Create(spec, &backend);
  REQUIRE(model_or.ok());
  Model& model = **model_or;
  const int rows = 6;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(rows * spec.input_dim), y;
  for (float& v : x) v = u(rng);
  const bool classify = spec.loss == LossType::kSoftmaxCrossEntropy;
  for (int r = 0; r < rows; ++r) {
    if (classify) {
      y.push_back(static_cast<float>(r % spec.output_dim));
    } else {
      for (int c = 0; c < spec.output_dim; ++c) y.push_back(u(rng));
    }
  }
  std::vector<float> params(model.num_params());
  Model::InitialValues(spec, seed, 0, absl::MakeSpan(params));
  for (float& p : params) p += 0.1f * u(rng);  // non-zero biases, off the init
  model.SetParams(params.data());
  model.ComputeGradients(x.data(), y.data(), rows);
  std::vector<float> grads(model.num_params());
  model.GetGrads(grads.data());

  // The training loss (dropout's masks included: the batch seed stays the same).
  auto loss_at = [&](const std::vector<float>& p) {
    model.SetParams(p.data());
    return model.ComputeGradients(x.data(), y.data(), rows).loss_sum / rows;
  };
  const double h = 1e-3;
  const double base = loss_at(params);
  for (const ParamTensor& t : model.tensors()) {
    if (t.state) continue;  // no gradient: GetGrads gives its values
    for (size_t k = 0; k < t.shape.size(); k += 1 + t.shape.size() / 7) {
      const size_t i = t.offset + k;
      std::vector<float> plus = params, minus = params;
      plus[i] += h;
      minus[i] -= h;
      const double up = (loss_at(plus) - base) / h, down = (base - loss_at(minus)) / h;
      INFO(t.shape.name << "[" << k << "] activation " << static_cast<int>(spec.activation)
                        << ": slopes " << down << " and " << up);
      CheckSlope(grads[i], down, up);
    }
  }
}

// Finite differences of L = sum(y * weights) for one layer on its own, in training or
// evaluation mode (SetMode with a fixed seed), against its Backward: the input gradient at a
// sample of the input's coordinates and every trained tensor's gradient at a sample of its
// coordinates. `state` (the layer's state_shapes, flat) stays as given on every evaluation.
inline void CheckLayerGradients(Layer& layer, int batch, bool training, uint64_t seed,
                                std::vector<float> state = {}) {
  CpuBackend backend;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  size_t num_params = 0;
  for (const ParamShape& p : layer.param_shapes()) num_params += p.size();
  std::vector<float> params(num_params), grads(num_params), x(batch * layer.input_dim());
  std::vector<float> weights(batch * layer.output_dim()), y(weights.size()), dx(x.size());
  for (float& v : params) v = u(rng);
  for (float& v : x) v = u(rng);
  for (float& v : weights) v = u(rng);
  const std::vector<float> initial_state = state;
  layer.Bind(params.data(), grads.data(), state.data());
  auto loss = [&] {
    state = initial_state;
    layer.SetMode(training, seed);
    layer.Forward(backend, x.data(), batch, y.data());
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * weights[i];
    return sum;
  };
  const double base = loss();
  layer.Backward(backend, x.data(), y.data(), weights.data(), batch, dx.data());
  const std::vector<float> analytic_params = grads, analytic_x = dx;
  const double h = 1e-3;
  auto check = [&](std::vector<float>& values, const std::vector<float>& analytic,
                   const char* what) {
    for (size_t i = 0; i < values.size(); i += 1 + values.size() / 9) {
      const float kept = values[i];
      values[i] = kept + h;
      const double up = (loss() - base) / h;
      values[i] = kept - h;
      const double down = (base - loss()) / h;
      values[i] = kept;
      INFO(layer.name() << (training ? " training, " : " evaluating, ") << what << "[" << i
                        << "]: slopes " << down << " and " << up);
      CheckSlope(analytic[i], down, up);
    }
  };
  check(x, analytic_x, "input");
  check(params, analytic_params, "parameter");
}

}  // namespace monsoon

#endif  // MONSOON_TESTS_GRADIENT_CHECK_H_
