#include "core/model/layers.h"

#include <algorithm>

#include "core/compute/kernel_math.h"

namespace monsoon {

void DenseLayer::Bind(float* params, float* grads, float* /*state*/) {
  w_ = params;
  b_ = params + static_cast<size_t>(g_.in) * g_.out;
  dw_ = grads;
  db_ = grads + static_cast<size_t>(g_.in) * g_.out;
}

void DenseLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.DenseForward(g_, x, w_, b_, batch, y);
}

void DenseLayer::Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy,
                          int batch, float* dx) {
  dy = relu_gradient_.Before(backend, y, dy, static_cast<size_t>(batch) * g_.out);
  // dW = x^T dy, db = column sums of dy, dx = dy W^T.
  backend.DenseWeightGradient(g_, x, dy, batch, dw_, db_);
  if (dx != nullptr) backend.Gemm(false, true, batch, g_.in, g_.out, 1.0f, dy, w_, 0.0f, dx);
}

void ActivationLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  backend.ActivationForward(f_, x, y, static_cast<size_t>(batch) * dim_);
}

void ActivationLayer::Backward(ComputeBackend& backend, const float* x, const float* y,
                               const float* dy, int batch, float* dx) {
  if (dx != nullptr) {
    backend.ActivationBackward(f_, x, y, dy, dx, static_cast<size_t>(batch) * dim_);
  }
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

const float* FusedReluGradient::Before(ComputeBackend& backend, const float* y, const float* dy,
                                       size_t n) {
  if (!active_) return dy;
  if (dy_.size() < n) dy_ = backend.Allocate(n);
  backend.ActivationBackward({Activation::kRelu}, nullptr, y, dy, dy_.data(), n);
  return dy_.data();
}

void Conv2dLayer::Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy,
                           int batch, float* dx) {
  dy = relu_gradient_.Before(backend, y, dy, static_cast<size_t>(batch) * output_dim());
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

void Pool2dLayer::Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy,
                           int batch, float* dx) {
  if (dx != nullptr) {
    backend.Pool2dBackward(g_, kind_, x, y, reinterpret_cast<const uint8_t*>(workspace_.data()), dy,
                           batch, dx);
  }
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

void BatchNormLayer::Backward(ComputeBackend& backend, const float* x, const float* y,
                              const float* dy, int batch, float* dx) {
  dy = relu_gradient_.Before(backend, y, dy, static_cast<size_t>(batch) * output_dim());
  backend.BatchNormBackward(g_, training_, x, gamma_, saved_.data(), saved_.data() + g_.channels,
                            dy, batch, dgamma_, dbeta_, dx);
}

ResidualLayer::ResidualLayer(LayerTensors tensors, std::string name,
                             std::vector<std::unique_ptr<Layer>> body,
                             std::unique_ptr<Layer> projection, int input_dim)
    : Layer(std::move(tensors)),
      name_(std::move(name)),
      body_(std::move(body)),
      projection_(std::move(projection)),
      input_dim_(input_dim) {}

std::vector<Layer*> ResidualLayer::parts() const {
  std::vector<Layer*> parts;
  for (const auto& layer : body_) parts.push_back(layer.get());
  if (projection_ != nullptr) parts.push_back(projection_.get());
  return parts;
}

void ResidualLayer::Bind(float* params, float* grads, float* state) {
  for (Layer* part : parts()) {
    part->Bind(params, grads, state);
    for (const ParamShape& s : part->param_shapes()) {
      params += s.size();
      grads += s.size();
    }
    for (const ParamShape& s : part->state_shapes()) state += s.size();
  }
}

void ResidualLayer::SetMode(bool training, uint64_t seed) {
  const std::vector<Layer*> all = parts();
  for (size_t i = 0; i < all.size(); ++i) all[i]->SetMode(training, SplitMix64(seed, i));
}

void ResidualLayer::EnsureBuffers(ComputeBackend& backend, int batch) {
  if (batch <= batch_) return;
  outputs_.clear();
  int widest = input_dim_;
  for (const auto& layer : body_) {
    outputs_.push_back(backend.Allocate(static_cast<size_t>(batch) * layer->output_dim()));
    widest = std::max(widest, layer->output_dim());
  }
  if (projection_ != nullptr) {
    shortcut_ = backend.Allocate(static_cast<size_t>(batch) * output_dim());
  }
  for (DeviceBuffer& s : scratch_) s = backend.Allocate(static_cast<size_t>(batch) * widest);
  batch_ = batch;
}

void ResidualLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  EnsureBuffers(backend, batch);
  const float* in = x;
  for (size_t i = 0; i < body_.size(); ++i) {
    body_[i]->Forward(backend, in, batch, outputs_[i].data());
    in = outputs_[i].data();
  }
  const float* shortcut = x;
  if (projection_ != nullptr) {
    projection_->Forward(backend, x, batch, shortcut_.data());
    shortcut = shortcut_.data();
  }
  backend.Add(in, shortcut, y, static_cast<size_t>(batch) * output_dim());
}

// dy reaches the body's last layer and the shortcut alike; dx is the sum of what comes back
// through both.
void ResidualLayer::Backward(ComputeBackend& backend, const float* x, const float* /*y*/,
                             const float* dy, int batch, float* dx) {
  const float* d = dy;
  for (size_t i = body_.size(); i-- > 0;) {
    const float* in = i == 0 ? x : outputs_[i - 1].data();
    float* d_in = i == 0 && dx == nullptr ? nullptr : scratch_[i % 2].data();
    body_[i]->Backward(backend, in, outputs_[i].data(), d, batch, d_in);
    d = d_in;
  }
  const float* d_shortcut = dy;
  if (projection_ != nullptr) {
    float* d_projection = dx == nullptr ? nullptr : scratch_[1].data();
    projection_->Backward(backend, x, shortcut_.data(), dy, batch, d_projection);
    d_shortcut = d_projection;
  }
  if (dx != nullptr) {
    backend.Add(scratch_[0].data(), d_shortcut, dx, static_cast<size_t>(batch) * input_dim_);
  }
}

const float* GlobalAvgPoolLayer::Ones(ComputeBackend& backend) {
  if (ones_.size() == 0) {
    ones_ = backend.Allocate(pixels_);
    const std::vector<float> ones(pixels_, 1.0f);
    backend.CopyToDevice(ones.data(), ones_.data(), ones.size());
  }
  return ones_.data();
}

float* GlobalAvgPoolLayer::Plain(ComputeBackend& backend, int batch) {
  const size_t n = static_cast<size_t>(batch) * input_dim();
  if (plain_.size() < n) plain_ = backend.Allocate(n);
  return plain_.data();
}

// y [batch*C x 1] = x [batch*C x pixels] . ones / pixels.
void GlobalAvgPoolLayer::Forward(ComputeBackend& backend, const float* x, int batch, float* y) {
  if (in_ == Layout::kNative) {
    float* plain = Plain(backend, batch);
    backend.ConvertLayout(channels_, height_, width_, batch, /*to_native=*/false, x, plain);
    x = plain;
  }
  backend.Gemm(false, false, batch * channels_, 1, pixels_, 1.0f / pixels_, x, Ones(backend), 0.0f,
               y);
}

// dx [batch*C x pixels] = dy [batch*C x 1] . ones^T / pixels.
void GlobalAvgPoolLayer::Backward(ComputeBackend& backend, const float* /*x*/, const float* /*y*/,
                                  const float* dy, int batch, float* dx) {
  if (dx == nullptr) return;
  const bool native = in_ == Layout::kNative;
  backend.Gemm(false, false, batch * channels_, pixels_, 1, 1.0f / pixels_, dy, Ones(backend), 0.0f,
               native ? Plain(backend, batch) : dx);
  if (native) {
    backend.ConvertLayout(channels_, height_, width_, batch, /*to_native=*/true, plain_.data(), dx);
  }
}

}  // namespace monsoon
