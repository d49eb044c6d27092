// Layers of a feed-forward model. Parameters and their gradients live in the model's flat
// buffers; a layer only borrows pointers into them (see Layer::Bind).
#ifndef MONSOON_CORE_MODEL_LAYERS_H_
#define MONSOON_CORE_MODEL_LAYERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/compute/compute_backend.h"

namespace monsoon {

// How a tensor of the flat vector starts: Glorot-uniform, zeros or ones.
enum class ParamInit { kGlorot, kZeros, kOnes };

// A tensor of the model's flat vector: a dense layer's weight [in, out] (y = x W) or a
// convolution's [filters, channels, kernel, kernel], row-major; a bias [n]; a BatchNorm
// layer's scale or shift, or one of its running statistics (state).
struct ParamShape {
  std::string name;
  std::vector<int> dims;
  ParamInit init = ParamInit::kGlorot;

  size_t size() const {
    size_t n = 1;
    for (const int d : dims) n *= d;
    return n;
  }
  // Glorot's fan-in plus fan-out: the first dimension plus the product of the others.
  int fans() const { return dims[0] + static_cast<int>(size() / dims[0]); }
};

// A layer's tensors in the flat vector: its trained ones, and its state, tensors that training
// changes without a gradient (a BatchNorm layer's running statistics). The model keeps every
// layer's state after all trained tensors, so that the servers hold it beside the weights
// (TrainableModel::num_state).
struct LayerTensors {
  std::vector<ParamShape> params;
  std::vector<ParamShape> state;
};

// Forward and backward over a batch of row-major activations [batch x dim].
class Layer {
 public:
  // `tensors`: the layer's, as its kind's declaration gives them (LayerKindDecl::tensors).
  explicit Layer(LayerTensors tensors = {}) : tensors_(std::move(tensors)) {}
  virtual ~Layer() = default;
  // What the model summary calls it: "dense0 (dense)", "relu".
  virtual std::string name() const = 0;
  virtual int input_dim() const = 0;
  virtual int output_dim() const = 0;
  // Its trained tensors, and its state.
  const std::vector<ParamShape>& param_shapes() const { return tensors_.params; }
  const std::vector<ParamShape>& state_shapes() const { return tensors_.state; }
  // Borrows this layer's slices of the flat parameter and gradient buffers, laid out in
  // param_shapes() order, and of the state, in state_shapes() order. Called once, before
  // Forward.
  virtual void Bind(float* params, float* grads, float* state) {}
  // Called before each Forward: whether the batch trains (else it is evaluated), and that
  // batch's random seed (dropout).
  virtual void SetMode(bool /*training*/, uint64_t /*seed*/) {}
  // y = layer(x).
  virtual void Forward(ComputeBackend& backend, const float* x, int batch, float* y) = 0;
  // Given x, y = layer(x) and dL/dy, overwrites this layer's gradients with dL/dparams and,
  // when dx is not null, writes dL/dx.
  virtual void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy,
                        int batch, float* dx) = 0;

 private:
  const LayerTensors tensors_;
};

// The gradient back through a ReLU fused into a layer's forward call (FusedRelu::kOnOutput),
// for layers whose backward kernels take the gradient before that ReLU.
class FusedReluGradient {
 public:
  // `active`: the layer fuses a ReLU and the next layer does not take the gradient back
  // through it itself.
  explicit FusedReluGradient(bool active) : active_(active) {}
  // The gradient before the ReLU, from its output y and dy ([n] each): dy where not active.
  const float* Before(ComputeBackend& backend, const float* y, const float* dy, size_t n);

 private:
  const bool active_;
  DeviceBuffer dy_;  // the last Before's, where active
};

// y = x W + b with W [in x out] and b [out]; with a fused ReLU (FusedRelu::kOnOutput) y is the
// ReLU's output, and Backward's dy the gradient with respect to it.
class DenseLayer : public Layer {
 public:
  DenseLayer(LayerTensors tensors, std::string name, const DenseGeometry& g)
      : Layer(std::move(tensors)),
        name_(std::move(name)),
        g_(g),
        relu_gradient_(g.relu == FusedRelu::kOnOutput) {}
  std::string name() const override { return name_ + " (dense)"; }
  int input_dim() const override { return g_.in; }
  int output_dim() const override { return g_.out; }
  void Bind(float* params, float* grads, float* state) override;
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const std::string name_;
  const DenseGeometry g_;
  FusedReluGradient relu_gradient_;
  float* w_ = nullptr;  // borrowed, [in x out]
  float* b_ = nullptr;  // borrowed, [out]
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

// y = f(x) elementwise (core/compute/activation.h).
class ActivationLayer : public Layer {
 public:
  ActivationLayer(ActivationFn f, int dim) : f_(f), dim_(dim) {}
  std::string name() const override { return ActivationName(f_.kind); }
  int input_dim() const override { return dim_; }
  int output_dim() const override { return dim_; }
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const ActivationFn f_;
  const int dim_;
};

// A 2-D convolution: weights [filters x channels*kernel*kernel], biases [filters]. Where the
// geometry fuses a ReLU (FusedRelu::kOnOutput), the output is the ReLU's, and Backward's dy the
// gradient with respect to it, unless `dy_before_relu`: the next layer then gives the gradient
// with respect to the ReLU's input (a pooling layer with FusedRelu::kOnInput).
class Conv2dLayer : public Layer {
 public:
  Conv2dLayer(LayerTensors tensors, std::string name, const Conv2dGeometry& g,
              bool dy_before_relu = false)
      : Layer(std::move(tensors)),
        name_(std::move(name)),
        g_(g),
        relu_gradient_(g.relu == FusedRelu::kOnOutput && !dy_before_relu) {}
  std::string name() const override { return name_ + " (conv2d)"; }
  int input_dim() const override { return g_.channels * g_.height * g_.width; }
  int output_dim() const override { return g_.filters * g_.out_height * g_.out_width; }
  void Bind(float* params, float* grads, float* state) override;
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const std::string name_;
  const Conv2dGeometry g_;
  FusedReluGradient relu_gradient_;
  float* w_ = nullptr;  // borrowed
  float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

// Inverted dropout: while training, each value is zeroed with probability `rate` and the rest
// scaled by 1 / (1 - rate), by a mask drawn from the batch's seed; evaluating, y = x.
class DropoutLayer : public Layer {
 public:
  DropoutLayer(float rate, int dim) : rate_(rate), dim_(dim) {}
  std::string name() const override { return "dropout"; }
  int input_dim() const override { return dim_; }
  int output_dim() const override { return dim_; }
  void SetMode(bool training, uint64_t seed) override {
    training_ = training;
    seed_ = seed;
  }
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const float rate_;
  const int dim_;
  bool training_ = false;
  uint64_t seed_ = 0;
  DeviceBuffer mask_;  // the last training batch's factors
};

// A flatten whose input is in the backend's native layout: y = x as [batch x C*H*W] (channels
// first). A flatten of a plain input is no layer: it changes only the shape.
class FlattenLayer : public Layer {
 public:
  FlattenLayer(int channels, int height, int width)
      : channels_(channels), height_(height), width_(width) {}
  std::string name() const override { return "flatten"; }
  int input_dim() const override { return channels_ * height_ * width_; }
  int output_dim() const override { return input_dim(); }
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const int channels_, height_, width_;
};

// Max or average pooling over each channel.
class Pool2dLayer : public Layer {
 public:
  Pool2dLayer(PoolKind kind, const Pool2dGeometry& g) : kind_(kind), g_(g) {}
  std::string name() const override { return kind_ == PoolKind::kMax ? "maxpool2d" : "avgpool2d"; }
  int input_dim() const override { return g_.channels * g_.height * g_.width; }
  int output_dim() const override { return g_.channels * g_.out_height * g_.out_width; }
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const PoolKind kind_;
  const Pool2dGeometry g_;
  DeviceBuffer workspace_;  // the backend's PoolWorkspaceBytes, as floats
};

// Batch normalisation of each channel (BatchNormGeometry): trained scale gamma (ones at first)
// and shift beta (zeros), and the running mean (zeros) and variance (ones) as state. Training
// normalises by the batch's statistics and moves the running ones; evaluating uses those.
class BatchNormLayer : public Layer {
 public:
  // A fused ReLU and dy_before_relu as Conv2dLayer's.
  BatchNormLayer(LayerTensors tensors, std::string name, const BatchNormGeometry& g,
                 bool dy_before_relu = false)
      : Layer(std::move(tensors)),
        name_(std::move(name)),
        g_(g),
        relu_gradient_(g.relu == FusedRelu::kOnOutput && !dy_before_relu) {}
  std::string name() const override { return name_ + " (batchnorm)"; }
  int input_dim() const override { return g_.channels * g_.pixels; }
  int output_dim() const override { return input_dim(); }
  void Bind(float* params, float* grads, float* state) override;
  void SetMode(bool training, uint64_t /*seed*/) override { training_ = training; }
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  // Backpropagates through the statistics of the last Forward's mode.
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const std::string name_;
  const BatchNormGeometry g_;
  FusedReluGradient relu_gradient_;
  bool training_ = false;
  float* gamma_ = nullptr;  // borrowed
  float* beta_ = nullptr;
  float* dgamma_ = nullptr;
  float* dbeta_ = nullptr;
  float* running_mean_ = nullptr;
  float* running_var_ = nullptr;
  DeviceBuffer saved_;  // the last Forward's mean and invstd, channels each
};

// A residual block: y = body(x) + shortcut(x), the shortcut being x itself or a projection
// layer (a 1x1 convolution). Owns its layers; their parameters and state are its own, laid out
// body first, then the projection's (`tensors`, which are its layers' in that order).
class ResidualLayer : public Layer {
 public:
  ResidualLayer(LayerTensors tensors, std::string name, std::vector<std::unique_ptr<Layer>> body,
                std::unique_ptr<Layer> projection /* null: identity */, int input_dim);
  std::string name() const override { return name_ + " (residual)"; }
  int input_dim() const override { return input_dim_; }
  int output_dim() const override { return body_.back()->output_dim(); }
  void Bind(float* params, float* grads, float* state) override;
  void SetMode(bool training, uint64_t seed) override;
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

  // Its layers: the body's, then the projection (when there is one).
  std::vector<Layer*> parts() const;
  const Layer* projection() const { return projection_.get(); }

 private:
  void EnsureBuffers(ComputeBackend& backend, int batch);

  const std::string name_;
  const std::vector<std::unique_ptr<Layer>> body_;
  const std::unique_ptr<Layer> projection_;
  const int input_dim_;
  int batch_ = 0;                      // the buffers' rows
  std::vector<DeviceBuffer> outputs_;  // outputs_[i]: body layer i's
  DeviceBuffer shortcut_;              // the projection's output
  DeviceBuffer scratch_[2];            // gradients inside the block, ping-pong
};

// Global average pooling: y[c] = the mean of channel c's height x width values, [C, H, W] in
// (either layout), [C] out. Forward and backward are products with a vector of ones (Gemm),
// on the input converted to [batch x C x H x W] where it lies in the native layout, so every
// backend runs it with no kernel of its own.
class GlobalAvgPoolLayer : public Layer {
 public:
  GlobalAvgPoolLayer(int channels, int height, int width, Layout in)
      : channels_(channels), height_(height), width_(width), pixels_(height * width), in_(in) {}
  std::string name() const override { return "globalavgpool2d"; }
  int input_dim() const override { return channels_ * pixels_; }
  int output_dim() const override { return channels_; }
  void Forward(ComputeBackend& backend, const float* x, int batch, float* y) override;
  void Backward(ComputeBackend& backend, const float* x, const float* y, const float* dy, int batch,
                float* dx) override;

 private:
  const float* Ones(ComputeBackend& backend);
  // A plain-layout buffer for a batch's input (or its gradient), where the input is native.
  float* Plain(ComputeBackend& backend, int batch);

  const int channels_, height_, width_, pixels_;
  const Layout in_;
  DeviceBuffer ones_;   // pixels_ ones
  DeviceBuffer plain_;  // Plain's
};

}  // namespace monsoon

#endif  // MONSOON_CORE_MODEL_LAYERS_H_
