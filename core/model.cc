#include "core/model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/kernel_math.h"

namespace monsoon {
namespace {

LayerKind ActivationKind(Activation f) {
  switch (f) {
    case Activation::kRelu:
      return LayerKind::kRelu;
    case Activation::kTanh:
      return LayerKind::kTanh;
    case Activation::kSigmoid:
      break;
  }
  return LayerKind::kSigmoid;
}

// Positions of a `window`-wide window moved by `stride` across `in`, unpadded (0 when it does
// not fit).
int UnpaddedPositions(int in, int window, int stride) {
  return in >= window ? (in - window) / stride + 1 : 0;
}

}  // namespace

Conv2dGeometry ConvGeometryOf(const LayerSpec& l, const Shape& in) {
  Conv2dGeometry g;
  g.channels = in[0];
  g.height = in[1];
  g.width = in[2];
  g.filters = l.filters;
  g.kernel = l.kernel;
  g.stride = l.stride;
  if (l.padding == Padding::kSame) {
    g.out_height = (g.height + l.stride - 1) / l.stride;
    g.out_width = (g.width + l.stride - 1) / l.stride;
    g.pad_top = std::max((g.out_height - 1) * l.stride + l.kernel - g.height, 0) / 2;
    g.pad_left = std::max((g.out_width - 1) * l.stride + l.kernel - g.width, 0) / 2;
  } else {
    g.out_height = UnpaddedPositions(g.height, l.kernel, l.stride);
    g.out_width = UnpaddedPositions(g.width, l.kernel, l.stride);
  }
  return g;
}

Pool2dGeometry PoolGeometryOf(const LayerSpec& l, const Shape& in) {
  Pool2dGeometry g;
  g.channels = in[0];
  g.height = in[1];
  g.width = in[2];
  g.size = l.size;
  g.stride = l.stride;
  g.out_height = UnpaddedPositions(g.height, l.size, l.stride);
  g.out_width = UnpaddedPositions(g.width, l.size, l.stride);
  return g;
}

namespace {

// Layer `l`'s output shape on input `in`, or why it does not fit.
absl::StatusOr<Shape> OutputShape(const LayerSpec& l, const Shape& in) {
  if (l.kind == LayerKind::kDense && in.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("takes a flat input, got ", ShapeText(in), "; put a flatten before it"));
  }
  const bool spatial = l.kind == LayerKind::kConv2d || l.kind == LayerKind::kMaxPool2d ||
                       l.kind == LayerKind::kAvgPool2d;
  if (spatial && in.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat("takes a (channels, height, width) input, got ",
                                                   ShapeText(in),
                                                   "; give model.input_shape as [C, H, W]"));
  }
  switch (l.kind) {
    case LayerKind::kDense:
      return Shape{l.units};
    case LayerKind::kFlatten:
      return Shape{ShapeSize(in)};
    case LayerKind::kConv2d: {
      const Conv2dGeometry g = ConvGeometryOf(l, in);
      if (g.out_height < 1 || g.out_width < 1) {
        return absl::InvalidArgumentError(absl::StrCat("a ", l.kernel, "x", l.kernel,
                                                       " kernel does not fit its input ",
                                                       ShapeText(in), " unpadded"));
      }
      return Shape{g.filters, g.out_height, g.out_width};
    }
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d: {
      const Pool2dGeometry g = PoolGeometryOf(l, in);
      if (g.out_height < 1 || g.out_width < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a ", l.size, "x", l.size, " window does not fit its input ", ShapeText(in)));
      }
      return Shape{g.channels, g.out_height, g.out_width};
    }
    case LayerKind::kDropout:
    case LayerKind::kRelu:
    case LayerKind::kTanh:
    case LayerKind::kSigmoid:
      break;
  }
  return in;
}

Activation ActivationOf(LayerKind kind) {
  return kind == LayerKind::kRelu   ? Activation::kRelu
         : kind == LayerKind::kTanh ? Activation::kTanh
                                    : Activation::kSigmoid;
}

// How layer i is built: where its input and output lie (in the backend's native layout or
// not) and the ReLU fused into it.
struct LayerPlan {
  bool native_in = false, native_out = false;
  // A convolution: the ReLU after it runs in its forward call. A pooling layer: its input is
  // such a fused ReLU's output, and its gradient goes back through that ReLU.
  bool relu = false;
  // A convolution with a fused ReLU whose pooling layer takes the gradient through the ReLU.
  bool dy_before_relu = false;
  // A ReLU run by the convolution before it: no layer of its own.
  bool fused = false;
};

// Layer i of a valid spec on input `in`, or nullptr for a flatten of a plain input (it changes
// only the shape) and a fused ReLU. Dense and conv2d layers are named dense0, dense1, ... and
// conv0, conv1, ... in order.
std::unique_ptr<Layer> MakeLayer(const LayerSpec& l, const Shape& in, const Shape& out,
                                 const LayerPlan& plan, int* dense, int* conv) {
  switch (l.kind) {
    case LayerKind::kDense:
      return std::make_unique<DenseLayer>(absl::StrCat("dense", (*dense)++), in[0], l.units);
    case LayerKind::kConv2d: {
      Conv2dGeometry g = ConvGeometryOf(l, in);
      g.native_in = plan.native_in;
      g.native_out = plan.native_out;
      g.relu = plan.relu;
      return std::make_unique<Conv2dLayer>(absl::StrCat("conv", (*conv)++), g, plan.dy_before_relu);
    }
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d: {
      Pool2dGeometry g = PoolGeometryOf(l, in);
      g.native = plan.native_in;
      g.relu_input = plan.relu;
      return std::make_unique<Pool2dLayer>(
          l.kind == LayerKind::kMaxPool2d ? PoolKind::kMax : PoolKind::kAverage, g);
    }
    case LayerKind::kFlatten:
      if (!plan.native_in) return nullptr;
      return std::make_unique<FlattenLayer>(in[0], in[1], in[2]);
    case LayerKind::kDropout:
      return std::make_unique<DropoutLayer>(static_cast<float>(l.rate), ShapeSize(out));
    case LayerKind::kRelu:
      if (plan.fused) return nullptr;
      break;
    case LayerKind::kTanh:
    case LayerKind::kSigmoid:
      break;
  }
  return std::make_unique<ActivationLayer>(ActivationOf(l.kind), ShapeSize(out));
}

Shape InputShape(const ModelSpec& spec) {
  return spec.input_shape.empty() ? Shape{spec.input_dim} : spec.input_shape;
}

// Whether a layer of this kind takes the native layout and passes it on (elementwise
// activations and pooling).
bool PassesNativeLayout(LayerKind kind) {
  return kind == LayerKind::kRelu || kind == LayerKind::kTanh || kind == LayerKind::kSigmoid ||
         kind == LayerKind::kMaxPool2d || kind == LayerKind::kAvgPool2d;
}

// Whether each layer's output stays in the native layout of channel block `block` (0: none):
// a convolution's whose filters the block divides, when every layer after it up to the next
// convolution or flatten takes that layout (activations and pooling, which then pass it on).

std::vector<bool> NativeOutputs(const std::vector<LayerSpec>& specs, int block) {
  std::vector<bool> native(specs.size(), false);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind != LayerKind::kConv2d) {
      native[i] = PassesNativeLayout(specs[i].kind) && i > 0 && native[i - 1];
      continue;
    }
    bool takes = block > 0 && specs[i].filters % block == 0;
    for (size_t j = i + 1; takes && j < specs.size(); ++j) {
      const LayerKind next = specs[j].kind;
      if (next == LayerKind::kConv2d || next == LayerKind::kFlatten) break;
      takes = PassesNativeLayout(next);
    }
    native[i] = takes;
  }
  return native;
}

// Each layer's plan for channel block `block` (0: no native layout). A ReLU right after a
// convolution whose output is native runs in the convolution's call; a pooling layer right after
// that ReLU takes the gradient back through it.
std::vector<LayerPlan> PlanLayers(const std::vector<LayerSpec>& specs, int block) {
  const std::vector<bool> native = NativeOutputs(specs, block);
  std::vector<LayerPlan> plans(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    plans[i].native_in = i > 0 && native[i - 1];
    plans[i].native_out = native[i];
  }
  const auto kind_at = [&](size_t i) {
    return i < specs.size() ? specs[i].kind : LayerKind::kDense;
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].kind != LayerKind::kConv2d || !native[i] || kind_at(i + 1) != LayerKind::kRelu) {
      continue;
    }
    plans[i].relu = true;
    plans[i + 1].fused = true;
    const LayerKind next = kind_at(i + 2);
    if (next == LayerKind::kMaxPool2d || next == LayerKind::kAvgPool2d) {
      plans[i].dy_before_relu = true;
      plans[i + 2].relu = true;
    }
  }
  return plans;
}

// The computing layers of a valid spec (LayerShapes OK), in order, with activations in the
// native layout of channel block `native_block` where they can be (0: none), and the index in
// ModelLayers(spec) of each in `spec_index` unless null.
std::vector<std::unique_ptr<Layer>> BuildLayers(const ModelSpec& spec, int native_block = 0,
                                                std::vector<size_t>* spec_index = nullptr) {
  const std::vector<LayerSpec> specs = ModelLayers(spec);
  const std::vector<Shape> shapes = LayerShapes(spec).value_or(std::vector<Shape>());
  const std::vector<LayerPlan> plans = PlanLayers(specs, native_block);
  std::vector<std::unique_ptr<Layer>> layers;
  Shape in = InputShape(spec);
  int dense = 0, conv = 0;
  for (size_t i = 0; i < specs.size() && i < shapes.size(); ++i) {
    if (auto layer = MakeLayer(specs[i], in, shapes[i], plans[i], &dense, &conv)) {
      layers.push_back(std::move(layer));
      if (spec_index != nullptr) spec_index->push_back(i);
    }
    in = shapes[i];
  }
  return layers;
}

}  // namespace

std::string ShapeText(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

int ShapeSize(const Shape& shape) {
  int n = 1;
  for (int d : shape) n *= d;
  return n;
}

int LayersOutputSize(const ModelSpec& spec) {
  if (spec.type != ModelType::kLayers) return spec.output_dim;
  const absl::StatusOr<std::vector<Shape>> shapes = LayerShapes(spec);
  return shapes.ok() && !shapes->empty() ? ShapeSize(shapes->back()) : spec.output_dim;
}

std::vector<LayerSpec> ModelLayers(const ModelSpec& spec) {
  if (spec.type == ModelType::kLayers) return spec.layers;
  if (spec.type == ModelType::kProgram) return {};
  std::vector<LayerSpec> layers;
  if (spec.input_shape.size() > 1) layers.push_back({LayerKind::kFlatten, 0});
  if (spec.type == ModelType::kMlp) {
    for (int width : spec.hidden) {
      layers.push_back({LayerKind::kDense, width});
      layers.push_back({ActivationKind(spec.activation), 0});
    }
  }
  layers.push_back({LayerKind::kDense, spec.output_dim});
  return layers;
}

absl::StatusOr<std::vector<Shape>> LayerShapes(const ModelSpec& spec) {
  const std::vector<LayerSpec> layers = ModelLayers(spec);
  std::vector<Shape> shapes;
  Shape shape = InputShape(spec);
  for (size_t i = 0; i < layers.size(); ++i) {
    absl::StatusOr<Shape> out = OutputShape(layers[i], shape);
    if (!out.ok()) {
      const std::string where =
          spec.type == ModelType::kLayers
              ? absl::StrCat("model.layers[", i, "] (", kLayerKindNames.Name(layers[i].kind), ")")
              : "model";
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", out.status().message()));
    }
    shape = *std::move(out);
    shapes.push_back(shape);
  }
  if (shape.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.layers: the model's output ", ShapeText(shape),
        " is not flat; end with a dense layer of as many units as classes or targets"));
  }
  return shapes;
}

std::vector<ParamTensor> Model::Layout(const ModelSpec& spec) {
  if (spec.type == ModelType::kProgram) return {{{"params", {spec.num_params}}, 0}};
  std::vector<ParamTensor> tensors;
  size_t offset = 0;
  for (const auto& layer : BuildLayers(spec)) {
    for (const ParamShape& shape : layer->param_shapes()) {
      tensors.push_back({shape, offset});
      offset += shape.size();
    }
  }
  return tensors;
}

namespace {

// The summary's rows: header, one per layer, total.
std::vector<std::array<std::string, 3>> SummaryRows(const ModelSpec& spec) {
  std::vector<std::array<std::string, 3>> rows = {{"layer", "output shape", "parameters"}};
  const std::vector<LayerSpec> specs = ModelLayers(spec);
  const std::vector<Shape> shapes = LayerShapes(spec).value_or(std::vector<Shape>());
  const std::vector<std::unique_ptr<Layer>> layers = BuildLayers(spec);
  size_t total = 0, computing = 0;
  for (size_t i = 0; i < specs.size() && i < shapes.size(); ++i) {
    if (specs[i].kind == LayerKind::kFlatten) {
      rows.push_back({"flatten", ShapeText(shapes[i]), "0"});
      continue;
    }
    const Layer& layer = *layers[computing++];
    size_t params = 0;
    for (const ParamShape& shape : layer.param_shapes()) params += shape.size();
    total += params;
    rows.push_back({layer.name(), ShapeText(shapes[i]), absl::StrCat(params)});
  }
  rows.push_back({"total", "", absl::StrCat(total)});
  return rows;
}

}  // namespace

std::string Model::Summary(const ModelSpec& spec) {
  if (spec.type == ModelType::kProgram) {
    return absl::StrCat("the worker program's model (cluster.worker_program): ", spec.num_params,
                        " parameters\n");
  }
  const std::vector<std::array<std::string, 3>> rows = SummaryRows(spec);
  size_t width[2] = {0, 0};
  for (const auto& row : rows) {
    for (int c = 0; c < 2; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string table;
  for (const auto& row : rows) {
    absl::StrAppend(&table, absl::StrFormat("%-*s  %-*s  %s", static_cast<int>(width[0]), row[0],
                                            static_cast<int>(width[1]), row[1], row[2]));
    while (!table.empty() && table.back() == ' ') table.pop_back();
    table += "\n";
  }
  return table;
}

size_t Model::NumParams(const ModelSpec& spec) {
  size_t n = 0;
  for (const ParamTensor& t : Layout(spec)) n += t.shape.size();
  return n;
}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(const ModelSpec& spec,
                                                     ComputeBackend* backend) {
  if (spec.type == ModelType::kProgram) {
    return absl::InvalidArgumentError(
        "model.type is program: the model is the worker program's (cluster.worker_program)");
  }
  if (spec.input_dim <= 0 || spec.output_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("model dimensions must be positive, got input ",
                                                   spec.input_dim, " output ", spec.output_dim));
  }
  for (int h : spec.hidden) {
    if (h <= 0) return absl::InvalidArgumentError("model hidden widths must be positive");
  }
  const absl::StatusOr<std::vector<Shape>> shapes = LayerShapes(spec);
  if (!shapes.ok()) return shapes.status();
  if (shapes->back() != Shape{spec.output_dim}) {
    return absl::InvalidArgumentError(absl::StrCat("model.output_dim is ", spec.output_dim,
                                                   " but the last layer's output is ",
                                                   ShapeText(shapes->back())));
  }
  return std::unique_ptr<Model>(new Model(spec, backend));
}

absl::StatusOr<std::unique_ptr<Model>> Model::Create(const ModelSpec& spec,
                                                     std::unique_ptr<ComputeBackend> backend) {
  absl::StatusOr<std::unique_ptr<Model>> model = Create(spec, backend.get());
  if (model.ok()) (*model)->owned_backend_ = std::move(backend);
  return model;
}

Model::Model(const ModelSpec& spec, ComputeBackend* backend)
    : spec_(spec),
      backend_(backend),
      layers_(BuildLayers(spec, backend->NativeChannelBlock(), &layer_spec_index_)),
      tensors_(Layout(spec)) {
  for (const ParamTensor& t : tensors_) num_params_ += t.shape.size();
  params_ = backend_->Allocate(num_params_);
  grads_ = backend_->Allocate(num_params_);
  size_t offset = 0;
  for (auto& layer : layers_) {
    size_t layer_size = 0;
    for (const ParamShape& shape : layer->param_shapes()) layer_size += shape.size();
    layer->Bind(params_.data() + offset, grads_.data() + offset);
    layer_params_.push_back({offset, layer_size});
    offset += layer_size;
  }
}

void Model::InitialValues(const ModelSpec& spec, uint64_t seed, size_t offset,
                          absl::Span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  if (spec.type == ModelType::kLinearRegression) return;
  const size_t end = offset + out.size();
  for (const ParamTensor& t : Layout(spec)) {
    if (t.shape.is_bias()) continue;  // biases start at zero
    const size_t lo = std::max(offset, t.offset);
    const size_t hi = std::min(end, t.offset + t.shape.size());
    const double limit = std::sqrt(6.0 / t.shape.fans());
    for (size_t i = lo; i < hi; ++i) {
      // Uniform in [-limit, limit), from (seed, i) alone.
      out[i - offset] = static_cast<float>((2.0 * UniformHash(seed, i) - 1.0) * limit);
    }
  }
}

void Model::SetParams(const float* host) {
  backend_->CopyToDevice(host, params_.data(), num_params_);
}
void Model::GetParams(float* host) { backend_->CopyToHost(params_.data(), host, num_params_); }
void Model::GetGrads(float* host) { backend_->CopyToHost(grads_.data(), host, num_params_); }

void Model::AddWeightDecay(float weight_decay) {
  if (weight_decay > 0) backend_->Axpy(weight_decay, params_.data(), grads_.data(), num_params_);
}

void Model::ApplyLocalSgd(float learning_rate) {
  backend_->Axpy(-learning_rate, grads_.data(), params_.data(), num_params_);
}

void Model::ApplyLocalNesterov(float learning_rate, float momentum) {
  if (velocity_.size() == 0) velocity_ = backend_->Allocate(num_params_);
  backend_->NesterovStep(learning_rate, momentum, grads_.data(), velocity_.data(), params_.data(),
                         num_params_);
}

void Model::GetVelocity(float* host) {
  if (velocity_.size() == 0) velocity_ = backend_->Allocate(num_params_);
  backend_->CopyToHost(velocity_.data(), host, num_params_);
}

void Model::AddToParams(const float* delta_host, float scale) {
  if (delta_.size() == 0) delta_ = backend_->Allocate(num_params_);
  backend_->CopyToDevice(delta_host, delta_.data(), num_params_);
  backend_->Axpy(scale, delta_.data(), params_.data(), num_params_);
}

void Model::EnsureWorkspace(int rows) {
  if (rows <= workspace_rows_) return;
  activations_.clear();
  activations_.push_back(backend_->Allocate(static_cast<size_t>(rows) * spec_.input_dim));
  int widest = spec_.input_dim;
  for (const auto& layer : layers_) {
    activations_.push_back(backend_->Allocate(static_cast<size_t>(rows) * layer->output_dim()));
    widest = std::max(widest, layer->output_dim());
  }
  const int target_cols = spec_.loss == LossType::kSoftmaxCrossEntropy ? 1 : spec_.output_dim;
  targets_ = backend_->Allocate(static_cast<size_t>(rows) * target_cols);
  loss_grad_ = backend_->Allocate(static_cast<size_t>(rows) * spec_.output_dim);
  for (DeviceBuffer& s : scratch_) s = backend_->Allocate(static_cast<size_t>(rows) * widest);
  workspace_rows_ = rows;
}

BatchResult Model::Forward(const float* x_host, const float* targets_host, int rows,
                           bool training) {
  EnsureWorkspace(rows);
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->SetMode(training, SplitMix64(batch_seed_, layer_spec_index_[i]));
  }
  backend_->CopyToDevice(x_host, activations_[0].data(),
                         static_cast<size_t>(rows) * spec_.input_dim);
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->Forward(*backend_, activations_[i].data(), rows, activations_[i + 1].data());
  }
  const bool classify = spec_.loss == LossType::kSoftmaxCrossEntropy;
  const size_t target_floats = static_cast<size_t>(rows) * (classify ? 1 : spec_.output_dim);
  backend_->CopyToDevice(targets_host, targets_.data(), target_floats);
  const float* out = activations_.back().data();
  const LossResult loss = classify
                              ? backend_->SoftmaxCrossEntropy(out, targets_.data(), rows,
                                                              spec_.output_dim, loss_grad_.data())
                              : backend_->MeanSquaredError(out, targets_.data(), rows,
                                                           spec_.output_dim, loss_grad_.data());
  return {loss.loss_sum, loss.correct, rows};
}

BatchResult Model::ComputeGradients(const float* x_host, const float* targets_host, int rows) {
  const BatchResult result = Forward(x_host, targets_host, rows, /*training=*/true);
  const float* dy = loss_grad_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    // The first layer's input gradient is never needed.
    float* dx = i == 0 ? nullptr : scratch_[i % 2].data();
    layers_[i]->Backward(*backend_, activations_[i].data(), activations_[i + 1].data(), dy, rows,
                         dx);
    if (stream_gradients_ && layer_params_[i].size > 0) {
      backend_->StartCopyToHost(grads_.data() + layer_params_[i].offset, layer_params_[i].size);
    }
    dy = dx;
  }
  return result;
}

BatchResult Model::Evaluate(const float* x_host, const float* targets_host, int rows) {
  return Forward(x_host, targets_host, rows, /*training=*/false);
}

}  // namespace monsoon
