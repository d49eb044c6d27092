#include "core/model/model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/compute/kernel_math.h"
#include "core/process/out_of_memory.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

// Whether any of `layers` (or of a block's inner layers) draws random numbers per batch from
// the batch seed (dropout), so that a step's kernels differ from batch to batch.
bool DrawsPerBatch(const std::vector<LayerSpec>& layers) {
  return std::any_of(layers.begin(), layers.end(), [](const LayerSpec& layer) {
    return (layer.kind == LayerKind::kDropout && layer.rate > 0) || DrawsPerBatch(layer.layers);
  });
}

// The layer kind of an MLP's hidden activation.
LayerKind ActivationKind(Activation f) {
  switch (f) {
#define MONSOON_ACTIVATION_LAYER(kind, name, meaning) \
  case Activation::kind:                              \
    return LayerKind::kind;
    MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_LAYER)
#undef MONSOON_ACTIVATION_LAYER
  }
  return LayerKind::kRelu;
}

Shape InputShape(const ModelSpec& spec) {
  return spec.input_shape.empty() ? Shape{spec.input_dim} : spec.input_shape;
}

// Whether each layer's output stays in the native layout of channel block `block` (0: none),
// given what each does with it (`layouts`), whether the list's input is native, and whether
// its output may be: that of a kind that produces it, when the block divides its channels and
// every layer after it up to the next producer or flattening kind passes it on (or the list
// ends, where its output may be native); that of a passing kind after such a one.
std::vector<bool> NativeOutputs(const std::vector<NativeLayout>& layouts,
                                const std::vector<Shape>& shapes, int block, bool in_native,
                                bool out_native) {
  std::vector<bool> native(layouts.size(), false);
  for (size_t i = 0; i < layouts.size(); ++i) {
    if (layouts[i] != NativeLayout::kProduces) {
      native[i] = layouts[i] == NativeLayout::kPasses && (i > 0 ? native[i - 1] : in_native);
      continue;
    }
    bool takes = block > 0 && shapes[i][0] % block == 0;
    size_t j = i + 1;
    for (; takes && j < layouts.size(); ++j) {
      if (layouts[j] == NativeLayout::kProduces || layouts[j] == NativeLayout::kFlattens) break;
      takes = layouts[j] == NativeLayout::kPasses;
    }
    native[i] = takes && (j < layouts.size() || out_native);
  }
  return native;
}

std::vector<NativeLayout> KindLayouts(const std::vector<LayerSpec>& specs, const Shape& in,
                                      const std::vector<Shape>& shapes, int block);

// Whether a residual block (`spec`, on `in`, giving `out`) can take and give the native layout
// of channel block `block`: its body keeps it from end to end, and the block divides its
// channels in and out.
bool ResidualPassesNative(const LayerSpec& spec, const Shape& in, const Shape& out, int block) {
  if (block == 0 || in.size() != 3 || in[0] % block != 0 || out[0] % block != 0) return false;
  const absl::StatusOr<std::vector<Shape>> shapes = LayerListShapes(spec.layers, in, "");
  if (!shapes.ok() || shapes->empty()) return false;
  return NativeOutputs(KindLayouts(spec.layers, in, *shapes, block), *shapes, block, true, true)
      .back();
}

// What each of `specs` (on `in`, giving `shapes`) does with the native layout of channel block
// `block`: its kind's, but a residual block passes it only where ResidualPassesNative.
std::vector<NativeLayout> KindLayouts(const std::vector<LayerSpec>& specs, const Shape& in,
                                      const std::vector<Shape>& shapes, int block) {
  std::vector<NativeLayout> layouts;
  for (size_t i = 0; i < specs.size(); ++i) {
    NativeLayout layout = DeclOf(specs[i].kind).layout;
    if (specs[i].kind == LayerKind::kResidual &&
        !ResidualPassesNative(specs[i], i > 0 ? shapes[i - 1] : in, shapes[i], block)) {
      layout = NativeLayout::kPlain;
    }
    layouts.push_back(layout);
  }
  return layouts;
}

// Each layer's plan for channel block `block` (0: no native layout), for a list whose input
// and output lie in `ends`. A ReLU right after a layer that absorbs it, with a native output,
// runs in that layer's call; a layer right after that ReLU which backpropagates through it
// takes the gradient back through it.
std::vector<LayerPlan> PlanLayers(const std::vector<LayerSpec>& specs, const Shape& in,
                                  const std::vector<Shape>& shapes, int block, Layout ends) {
  const bool native_ends = ends == Layout::kNative;
  const std::vector<bool> native =
      NativeOutputs(KindLayouts(specs, in, shapes, block), shapes, block, native_ends, native_ends);
  std::vector<LayerPlan> plans(specs.size());
  const auto layout = [](bool native) { return native ? Layout::kNative : Layout::kPlain; };
  for (size_t i = 0; i < specs.size(); ++i) {
    plans[i].in = i > 0 ? layout(native[i - 1]) : ends;
    plans[i].out = layout(native[i]);
  }
  for (size_t i = 0; i + 1 < specs.size(); ++i) {
    const ReluFusion fusion = DeclOf(specs[i].kind).absorbs_relu;
    if (fusion == ReluFusion::kNo || (fusion == ReluFusion::kOnNativeLayout && !native[i]) ||
        specs[i + 1].kind != LayerKind::kRelu) {
      continue;
    }
    plans[i].relu = FusedRelu::kOnOutput;
    plans[i + 1].fused = true;
    if (i + 2 < specs.size() &&
        DeclOf(specs[i + 2].kind).backprops_through_relu == GradientThroughRelu::kYes) {
      plans[i].dy_before_relu = true;
      plans[i + 2].relu = FusedRelu::kOnInput;
    }
  }
  return plans;
}

// The computing layers of a valid spec (LayerShapes OK), in order, with activations in the
// native layout of channel block `native_block` where they can be (0: none), and the index in
// ModelLayers(spec) of each in `spec_index` unless null.
std::vector<std::unique_ptr<Layer>> BuildLayers(const ModelSpec& spec, int native_block = 0,
                                                std::vector<size_t>* spec_index = nullptr) {
  return BuildLayerList(ModelLayers(spec), InputShape(spec), native_block, Layout::kPlain, "",
                        spec_index);
}

}  // namespace

std::vector<std::unique_ptr<Layer>> BuildLayerList(const std::vector<LayerSpec>& specs,
                                                   const Shape& in, int native_block, Layout ends,
                                                   const std::string& prefix,
                                                   std::vector<size_t>* spec_index) {
  const std::vector<Shape> shapes = LayerListShapes(specs, in, "").value_or(std::vector<Shape>());
  if (shapes.size() != specs.size()) return {};
  const std::vector<LayerPlan> plans = PlanLayers(specs, in, shapes, native_block, ends);
  const std::vector<std::string> names = TensorNames(specs, prefix);
  std::vector<std::unique_ptr<Layer>> layers;
  Shape layer_in = in;
  for (size_t i = 0; i < specs.size(); ++i) {
    const LayerKindDecl& decl = DeclOf(specs[i].kind);
    LayerTensors tensors;
    if (decl.tensors != nullptr) tensors = decl.tensors(specs[i], layer_in, shapes[i], names[i]);
    if (auto layer = decl.make({specs[i], layer_in, shapes[i], plans[i], names[i], native_block,
                                std::move(tensors)})) {
      layers.push_back(std::move(layer));
      if (spec_index != nullptr) spec_index->push_back(i);
    }
    layer_in = shapes[i];
  }
  return layers;
}

absl::StatusOr<std::vector<Shape>> LayerListShapes(const std::vector<LayerSpec>& layers,
                                                   const Shape& in, const std::string& where) {
  std::vector<Shape> shapes;
  Shape shape = in;
  for (size_t i = 0; i < layers.size(); ++i) {
    absl::StatusOr<Shape> out = LayerOutputShape(layers[i], shape);
    if (!out.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "[", i, "] (",
                                                     kLayerKindNames.Name(layers[i].kind),
                                                     "): ", out.status().message()));
    }
    shape = *std::move(out);
    shapes.push_back(shape);
  }
  return shapes;
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
  MONSOON_ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                           LayerListShapes(ModelLayers(spec), InputShape(spec), "model.layers"));
  const Shape& out = shapes.empty() ? InputShape(spec) : shapes.back();
  if (out.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.layers: the model's output ", ShapeText(out),
        " is not flat; end with a dense layer of as many units as classes or targets"));
  }
  return shapes;
}

std::vector<ParamTensor> Model::Layout(const ModelSpec& spec) {
  if (spec.type == ModelType::kProgram) {
    std::vector<ParamTensor> tensors = {{{"params", {spec.num_params - spec.num_state}}, 0}};
    if (spec.num_state > 0) {
      tensors.push_back({{"state", {spec.num_state}}, tensors[0].shape.size(), true});
    }
    return tensors;
  }
  std::vector<ParamTensor> tensors;
  const LayerTensors all = LayerListTensors(ModelLayers(spec), InputShape(spec), "");
  size_t offset = 0;
  for (const bool state : {false, true}) {
    for (const ParamShape& shape : state ? all.state : all.params) {
      tensors.push_back({shape, offset, state});
      offset += shape.size();
    }
  }
  return tensors;
}

namespace {

using SummaryRow = std::array<std::string, 3>;

// Appends a row per layer of `specs` on input `in` to `rows`, each name after `indent`, with
// `layers` their computing layers (built from them in order); a residual block's layers follow
// its row, indented. Returns the parameters of `specs`.
size_t AppendSummaryRows(const std::vector<LayerSpec>& specs, const Shape& in,
                         const std::vector<const Layer*>& layers, const std::string& indent,
                         std::vector<SummaryRow>* rows) {
  const std::vector<Shape> shapes = LayerListShapes(specs, in, "").value_or(std::vector<Shape>());
  std::vector<size_t> spec_index;  // of each computing layer
  BuildLayerList(specs, in, 0, Layout::kPlain, "", &spec_index);
  size_t total = 0, computing = 0;
  Shape layer_in = in;
  for (size_t i = 0; i < specs.size() && i < shapes.size(); ++i) {
    // A layer that computes nothing (a flatten of a plain input) has no parameters.
    if (computing == spec_index.size() || spec_index[computing] != i) {
      rows->push_back({indent + kLayerKindNames.Name(specs[i].kind), ShapeText(shapes[i]), "0"});
      layer_in = shapes[i];
      continue;
    }
    const Layer& layer = *layers[computing++];
    size_t params = 0;
    for (const ParamShape& shape : layer.param_shapes()) params += shape.size();
    total += params;
    rows->push_back({indent + layer.name(), ShapeText(shapes[i]), absl::StrCat(params)});
    if (const auto* block = dynamic_cast<const ResidualLayer*>(&layer)) {
      const std::vector<Layer*> parts = block->parts();
      std::vector<const Layer*> body(parts.begin(), parts.end());
      if (block->projection() != nullptr) body.pop_back();
      const size_t in_body =
          AppendSummaryRows(specs[i].layers, layer_in, body, indent + "  ", rows);
      if (block->projection() != nullptr) {
        rows->push_back({indent + "  " + block->projection()->name(), ShapeText(shapes[i]),
                         absl::StrCat(params - in_body)});
      }
    }
    layer_in = shapes[i];
  }
  return total;
}

// The summary's rows: header, one per layer, total.
std::vector<SummaryRow> SummaryRows(const ModelSpec& spec) {
  std::vector<SummaryRow> rows = {{"layer", "output shape", "parameters"}};
  const std::vector<std::unique_ptr<Layer>> layers = BuildLayers(spec);
  std::vector<const Layer*> computing;
  for (const auto& layer : layers) computing.push_back(layer.get());
  const size_t total = AppendSummaryRows(ModelLayers(spec), InputShape(spec), computing, "", &rows);
  rows.push_back({"total", "", absl::StrCat(total)});
  return rows;
}

}  // namespace

std::string Model::Summary(const ModelSpec& spec) {
  if (spec.type == ModelType::kProgram) {
    return absl::StrCat("the worker program's model (cluster.worker_program): ", spec.num_params,
                        " parameters\n");
  }
  const std::vector<SummaryRow> rows = SummaryRows(spec);
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

std::vector<Model::LayerFootprint> Model::Footprints(const ModelSpec& spec) {
  std::vector<LayerFootprint> out;
  for (const std::unique_ptr<Layer>& layer : BuildLayers(spec)) {
    LayerFootprint f{layer->name(), 0, static_cast<size_t>(layer->output_dim())};
    for (const ParamShape& shape : layer->param_shapes()) f.params += shape.size();
    for (const ParamShape& shape : layer->state_shapes()) f.params += shape.size();
    if (const auto* block = dynamic_cast<const ResidualLayer*>(layer.get())) {
      for (const Layer* part : block->parts()) f.values += part->output_dim();
    }
    out.push_back(std::move(f));
  }
  return out;
}

size_t Model::NumParams(const ModelSpec& spec) {
  size_t n = 0;
  for (const ParamTensor& t : Layout(spec)) n += t.shape.size();
  return n;
}

size_t Model::NumState(const ModelSpec& spec) {
  size_t n = 0;
  for (const ParamTensor& t : Layout(spec)) n += t.state ? t.shape.size() : 0;
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
  const Allocating allocating(absl::StrCat("the model's ", NumParams(spec), " parameters"));
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
  for (const ParamTensor& t : tensors_) {
    num_params_ += t.shape.size();
    num_state_ += t.state ? t.shape.size() : 0;
  }
  params_ = backend_->Allocate(num_params_);
  grads_ = backend_->Allocate(num_params_);
  loss_ = backend_->Allocate(kLossFloats);
  set_graphs(true);
  size_t offset = 0, state_offset = num_params_ - num_state_;
  for (auto& layer : layers_) {
    size_t layer_size = 0, layer_state = 0;
    for (const ParamShape& shape : layer->param_shapes()) layer_size += shape.size();
    for (const ParamShape& shape : layer->state_shapes()) layer_state += shape.size();
    layer->Bind(params_.data() + offset, grads_.data() + offset, params_.data() + state_offset);
    layer_params_.push_back({offset, layer_size});
    offset += layer_size;
    state_offset += layer_state;
  }
}

void Model::InitialValues(const ModelSpec& spec, uint64_t seed, size_t offset,
                          absl::Span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  if (spec.type == ModelType::kLinearRegression) return;
  const size_t end = offset + out.size();
  for (const ParamTensor& t : Layout(spec)) {
    if (t.shape.init == ParamInit::kZeros) continue;
    const size_t lo = std::max(offset, t.offset);
    const size_t hi = std::min(end, t.offset + t.shape.size());
    const double limit = std::sqrt(6.0 / t.shape.fans());
    for (size_t i = lo; i < hi; ++i) {
      // Glorot: uniform in [-limit, limit), from (seed, i) alone.
      out[i - offset] = t.shape.init == ParamInit::kOnes
                            ? 1.0f
                            : static_cast<float>((2.0 * UniformHash(seed, i) - 1.0) * limit);
    }
  }
}

void Model::SetParams(const float* host) {
  backend_->CopyToDevice(host, params_.data(), num_params_);
}
void Model::GetParams(float* host) { backend_->CopyToHost(params_.data(), host, num_params_); }
size_t Model::GetGrads(float* host) {
  const size_t trained = num_params_ - num_state_;
  const size_t first = backend_->CopyToHostFindingNonFinite(grads_.data(), host, trained);
  if (num_state_ == 0) return first;
  const size_t state_first =
      backend_->CopyToHostFindingNonFinite(params_.data() + trained, host + trained, num_state_);
  return first < trained ? first : trained + state_first;
}

void Model::AddWeightDecay(float weight_decay) {
  if (weight_decay > 0) {
    backend_->Axpy(weight_decay, params_.data(), grads_.data(), num_params_ - num_state_);
  }
}

void Model::ApplyLocalSgd(float learning_rate) {
  backend_->Axpy(-learning_rate, grads_.data(), params_.data(), num_params_ - num_state_);
}

void Model::ApplyLocalNesterov(float learning_rate, float momentum) {
  if (velocity_.size() == 0) velocity_ = backend_->Allocate(num_params_);
  backend_->NesterovStep(learning_rate, momentum, grads_.data(), velocity_.data(), params_.data(),
                         num_params_ - num_state_);
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

int Model::target_cols() const {
  return spec_.loss == LossType::kSoftmaxCrossEntropy ? 1 : spec_.output_dim;
}

void Model::EnsureWorkspace(int rows) {
  if (rows <= workspace_rows_) return;
  DropGraphs();
  const Allocating allocating(absl::StrCat("the model's activations for a batch of ", rows));
  activations_.clear();
  activations_.push_back(backend_->Allocate(static_cast<size_t>(rows) * spec_.input_dim));
  int widest = spec_.input_dim;
  for (const auto& layer : layers_) {
    activations_.push_back(backend_->Allocate(static_cast<size_t>(rows) * layer->output_dim()));
    widest = std::max(widest, layer->output_dim());
  }
  targets_ = backend_->Allocate(static_cast<size_t>(rows) * target_cols());
  loss_grad_ = backend_->Allocate(static_cast<size_t>(rows) * spec_.output_dim);
  for (DeviceBuffer& s : scratch_) s = backend_->Allocate(static_cast<size_t>(rows) * widest);
  workspace_rows_ = rows;
}

// Both uploads before the forward pass is queued: a copy from pinned memory waits for the
// compute queued before it.
void Model::UploadBatch(const float* x_host, const float* targets_host, int rows) {
  EnsureWorkspace(rows);
  backend_->CopyToDevice(x_host, activations_[0].data(),
                         static_cast<size_t>(rows) * spec_.input_dim);
  backend_->CopyToDevice(targets_host, targets_.data(), static_cast<size_t>(rows) * target_cols());
}

void Model::TakeBatch(const HostBatch& batch) {
  if (batch.rows == 0 || !(batch == prefetched_)) {
    UploadBatch(batch.x, batch.targets, batch.rows);
    return;
  }
  prefetched_ = {};
  ++prefetched_batches_;
  EnsureWorkspace(batch.rows);
  backend_->AwaitStartedUploads();
  backend_->CopyOnDevice(prefetched_x_.data(), activations_[0].data(),
                         static_cast<size_t>(batch.rows) * spec_.input_dim);
  backend_->CopyOnDevice(prefetched_targets_.data(), targets_.data(),
                         static_cast<size_t>(batch.rows) * target_cols());
}

void Model::StartPrefetch() {
  const HostBatch next = std::exchange(to_prefetch_, HostBatch{});
  if (next.rows <= 0) return;
  const size_t x_size = static_cast<size_t>(next.rows) * spec_.input_dim;
  const size_t targets_size = static_cast<size_t>(next.rows) * target_cols();
  if (prefetched_x_.size() < x_size || prefetched_targets_.size() < targets_size) {
    const Allocating allocating(absl::StrCat("a prefetched batch of ", next.rows));
    prefetched_x_ = backend_->Allocate(x_size);
    prefetched_targets_ = backend_->Allocate(targets_size);
  }
  backend_->StartCopyToDevice(next.x, prefetched_x_.data(), x_size);
  backend_->StartCopyToDevice(next.targets, prefetched_targets_.data(), targets_size);
  prefetched_ = next;
}

void Model::GatherBatch(absl::Span<const uint32_t> rows) {
  const int n = static_cast<int>(rows.size());
  EnsureWorkspace(n);
  if (batch_rows_.size() < rows.size()) batch_rows_ = backend_->Allocate(rows.size());
  batch_rows_host_.assign(rows.begin(), rows.end());  // exact: fewer than kMaxGatherRows
  backend_->CopyToDevice(batch_rows_host_.data(), batch_rows_.data(), rows.size());
  backend_->GatherRows(held_features_.data(), spec_.input_dim, batch_rows_.data(), n,
                       activations_[0].data());
  backend_->GatherRows(held_targets_.data(), target_cols(), batch_rows_.data(), n, targets_.data());
}

bool Model::HoldRows(absl::Span<const float> features, absl::Span<const float> targets,
                     size_t budget_bytes) {
  const size_t n = features.size() / spec_.input_dim;
  const size_t bytes = (features.size() + targets.size()) * sizeof(float);
  if (!backend_->separate_memory() || n == 0 || n >= kMaxGatherRows || bytes > budget_bytes ||
      targets.size() != n * target_cols()) {
    return false;
  }
  held_features_ = backend_->Allocate(features.size());
  held_targets_ = backend_->Allocate(targets.size());
  // In pieces: an upload from pageable memory stages through a pinned buffer as large as it.
  constexpr size_t kPiece = size_t{1} << 22;
  for (const auto& [from, to] :
       {std::pair(features, held_features_.data()), std::pair(targets, held_targets_.data())}) {
    for (size_t at = 0; at < from.size(); at += kPiece) {
      backend_->CopyToDevice(from.data() + at, to + at, std::min(kPiece, from.size() - at));
    }
  }
  return true;
}

void Model::Forward(int rows, bool training) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->SetMode(training, SplitMix64(batch_seed_, layer_spec_index_[i]));
    layers_[i]->Forward(*backend_, activations_[i].data(), rows, activations_[i + 1].data());
  }
  const float* out = activations_.back().data();
  if (spec_.loss == LossType::kSoftmaxCrossEntropy) {
    backend_->SoftmaxCrossEntropy(out, targets_.data(), rows, spec_.output_dim, loss_grad_.data(),
                                  loss_.data());
  } else {
    backend_->MeanSquaredError(out, targets_.data(), rows, spec_.output_dim, loss_grad_.data(),
                               loss_.data());
  }
}

BatchResult Model::ReadLoss(int rows) {
  float host[kLossFloats] = {};
  backend_->CopyToHost(loss_.data(), host, kLossFloats);
  const LossResult loss = LossResult::Read(host);
  return {loss.loss_sum, loss.correct, rows};
}

void Model::Backward(int rows, bool stream) {
  const float* dy = loss_grad_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    // The first layer's input gradient is never needed.
    float* dx = i == 0 ? nullptr : scratch_[i % 2].data();
    layers_[i]->Backward(*backend_, activations_[i].data(), activations_[i + 1].data(), dy, rows,
                         dx);
    if (stream && stream_gradients_to_ != nullptr && layer_params_[i].size > 0) {
      const size_t offset = layer_params_[i].offset;
      backend_->StartCopyToHost(grads_.data() + offset, stream_gradients_to_ + offset,
                                layer_params_[i].size);
    }
    dy = dx;
  }
}

void Model::TrainStep(int rows) {
  if (RunAsGraph(rows)) {
    ++graphed_steps_;
    return;
  }
  Forward(rows, /*training=*/true);
  Backward(rows, /*stream=*/true);
}

bool Model::RunAsGraph(int rows) {
  if (!graphs_possible_) return false;
  if (const auto it = graphs_.find(rows); it != graphs_.end()) {
    if (backend_->RunGraph(it->second)) return true;
    graphs_.erase(it);  // the backend dropped it: record it again at the next step
    return false;
  }
  if (stepped_rows_.insert(rows).second) return false;
  if (!backend_->BeginGraph()) {
    graphs_possible_ = false;
    return false;
  }
  Forward(rows, /*training=*/true);
  Backward(rows, /*stream=*/false);
  const int graph = backend_->EndGraph();
  if (graph < 0) {
    graphs_possible_ = false;
    return false;
  }
  graphs_[rows] = graph;
  return backend_->RunGraph(graph);
}

void Model::set_graphs(bool on) {
  DropGraphs();
  graphs_possible_ = on && !DrawsPerBatch(ModelLayers(spec_));
}

void Model::DropGraphs() {
  for (const auto& [rows, graph] : graphs_) backend_->DropGraph(graph);
  graphs_.clear();
  stepped_rows_.clear();
}

BatchResult Model::ComputeGradients(const float* x_host, const float* targets_host, int rows) {
  TakeBatch({x_host, targets_host, rows});
  StartPrefetch();  // after the copies out of its buffers, beside this step
  TrainStep(rows);
  return ReadLoss(rows);
}

BatchResult Model::ComputeGradientsOnHeld(absl::Span<const uint32_t> rows) {
  GatherBatch(rows);
  const int n = static_cast<int>(rows.size());
  TrainStep(n);
  return ReadLoss(n);
}

BatchResult Model::Evaluate(const float* x_host, const float* targets_host, int rows) {
  UploadBatch(x_host, targets_host, rows);
  Forward(rows, /*training=*/false);
  return ReadLoss(rows);
}

}  // namespace monsoon
