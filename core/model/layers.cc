#include "core/model/layers.h"

namespace monsoon {

std::vector<ParamShape> DenseLayer::param_shapes() const {
  return {{name_ + ".weight", {in_, out_}}, {name_ + ".bias", {out_}, ParamInit::kZeros}};
}

void DenseLayer::Bind(float* params, float* grads, float* /*state*/) {
  w_ = params;
  b_ = params + static_cast<size_t>(in_) * out_;
  dw_ = grads;
  db_ = grads + static_cast<size_t>(in_) * out_;
}

void DenseLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.Gemm(false, false, batch, out_, in_, 1.0f, x, w_, 0.0f, y);
  backend.AddBias(b_, batch, out_, y);
}

void DenseLayer::Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy,
                          int batch, float* dx) {
  // dW = x^T dy, db = column sums of dy, dx = dy W^T.
  backend.Gemm(true, false, in_, out_, batch, 1.0f, x, dy, 0.0f, dw_);
  backend.ColumnSum(dy, batch, out_, db_);
  if (dx != nullptr) backend.Gemm(false, true, batch, in_, out_, 1.0f, dy, w_, 0.0f, dx);
}

std::string ActivationLayer::name() const {
  switch (f_) {
    case Activation::kRelu:
      return "relu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      break;
  }
  return "sigmoid";
}

void ActivationLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.ActivationForward(f_, x, y, static_cast<size_t>(batch) * dim_);
}

void ActivationLayer::Backward(ComputeBackend& backend, const float* x, const float* y,
                               const float* dy, int batch, float* dx) {
  if (dx != nullptr) backend.ActivationBackward(f_, y, dy, dx, static_cast<size_t>(batch) * dim_);
}

void LeakyReluLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.LeakyReluForward(slope_, x, y, static_cast<size_t>(batch) * dim_);
}

void LeakyReluLayer::Backward(ComputeBackend& backend, const float* /*x*/, const float* y,
                              const float* dy, int batch, float* dx) {
  if (dx != nullptr) backend.LeakyReluBackward(slope_, y, dy, dx, static_cast<size_t>(batch) * dim_);
}

std::vector<ParamShape> Conv2dLayer::param_shapes() const {
  return {{name_ + ".weight", {g_.filters, g_.channels, g_.kernel, g_.kernel}},
          {name_ + ".bias", {g_.filters}, ParamInit::kZeros}};
}

void Conv2dLayer::Bind(float* params, float* grads, float* /*state*/) {
  const size_t weights = static_cast<size_t>(g_.filters) * g_.patch();
  w_ = params;
  b_ = params + weights;
  dw_ = grads;
  db_ = grads + weights;
}

void Conv2dLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.Conv2dForward(g_, x, w_, b_, batch, y);
}

void Conv2dLayer::Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy,
                           int batch, float* dx) {
  if (g_.relu == FusedRelu::kOnOutput && !dy_before_relu_) {
    const size_t n = static_cast<size_t>(batch) * output_dim();
    if (relu_dy_.size() < n) relu_dy_ = backend.Allocate(n);
    backend.ActivationBackward(Activation::kRelu, y, dy, relu_dy_.data(), n);
    dy = relu_dy_.data();
  }
  backend.Conv2dBackward(g_, x, w_, dy, batch, dw_, db_, dx);
}

void DropoutLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  const size_t n = static_cast<size_t>(batch) * dim_;
  if (mask_.size() < n) mask_ = backend.Allocate(n);
  // Evaluating, a rate of 0 keeps every value as it is.
  backend.DropoutForward(training_ ? rate_ : 0.0f, seed_, x, mask_.data(), y, n);
}

void DropoutLayer::Backward(ComputeBackend& backend, const float* /*x*/, const float* /*y*/,
                            const float* dy, int batch, float* dx) {
  if (dx == nullptr) return;
  backend.DropoutBackward(mask_.data(), dy, dx, static_cast<size_t>(batch) * dim_);
}

void FlattenLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.ConvertLayout(channels_, height_, width_, batch, /*to_native=*/false, x, y);
}

void FlattenLayer::Backward(ComputeBackend& backend, const float* /*x*/, const float* /*y*/,
                            const float* dy, int batch, float* dx) {
  if (dx != nullptr) backend.ConvertLayout(channels_, height_, width_, batch, true, dy, dx);
}

void Pool2dLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  const size_t floats = (backend.PoolWorkspaceBytes(g_, kind_, batch) + 3) / 4;
  if (workspace_.size() < floats) workspace_ = backend.Allocate(floats);
  backend.Pool2dForward(g_, kind_, x, batch, y, reinterpret_cast<uint8_t*>(workspace_.data()));
}

void Pool2dLayer::Backward(ComputeBackend& backend, const float* x, const float* /*y*/,
                           const float* dy, int batch, float* dx) {
  if (dx != nullptr) {
    backend.Pool2dBackward(g_, kind_, x, reinterpret_cast<const uint8_t*>(workspace_.data()), dy,
                           batch, dx);
  }
}

std::vector<ParamShape> BatchNormLayer::param_shapes() const {
  return {{name_ + ".weight", {g_.channels}, ParamInit::kOnes},
          {name_ + ".bias", {g_.channels}, ParamInit::kZeros}};
}

std::vector<ParamShape> BatchNormLayer::state_shapes() const {
  return {{name_ + ".running_mean", {g_.channels}, ParamInit::kZeros},
          {name_ + ".running_var", {g_.channels}, ParamInit::kOnes}};
}

void BatchNormLayer::Bind(float* params, float* grads, float* state) {
  gamma_ = params;
  beta_ = params + g_.channels;
  dgamma_ = grads;
  dbeta_ = grads + g_.channels;
  running_mean_ = state;
  running_var_ = state + g_.channels;
}

void BatchNormLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  if (saved_.size() == 0) saved_ = backend.Allocate(2 * static_cast<size_t>(g_.channels));
  backend.BatchNormForward(g_, training_, x, gamma_, beta_, running_mean_, running_var_, batch, y,
                           saved_.data(), saved_.data() + g_.channels);
}

void BatchNormLayer::Backward(ComputeBackend& backend, const float* x, const float* /*y*/,
                              const float* dy, int batch, float* dx) {
  backend.BatchNormBackward(g_, training_, x, gamma_, saved_.data(), saved_.data() + g_.channels,
                            dy, batch, dgamma_, dbeta_, dx);
}

const float* GlobalAvgPoolLayer::Ones(ComputeBackend& backend) {
  if (ones_.size() == 0) {
    ones_ = backend.Allocate(pixels_);
    const std::vector<float> ones(pixels_, 1.0f);
    backend.CopyToDevice(ones.data(), ones_.data(), ones.size());
  }
  return ones_.data();
}

// y [batch*C x 1] = x [batch*C x pixels] . ones / pixels.
void GlobalAvgPoolLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.Gemm(false, false, batch * channels_, 1, pixels_, 1.0f / pixels_, x, Ones(backend), 0.0f,
               y);
}

// dx [batch*C x pixels] = dy [batch*C x 1] . ones^T / pixels.
void GlobalAvgPoolLayer::Backward(ComputeBackend& backend, const float* /*x*/, const float* /*y*/,
                                  const float* dy, int batch, float* dx) {
  if (dx == nullptr) return;
  backend.Gemm(false, false, batch * channels_, pixels_, 1, 1.0f / pixels_, dy, Ones(backend),
               0.0f, dx);
}

}  // namespace monsoon
