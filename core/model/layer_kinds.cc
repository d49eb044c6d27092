#include "core/model/layer_kinds.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

constexpr int kMaxSize = 1 << 24;

// Positions of a `window`-wide window moved by `stride` across `in`, unpadded (0 when it does
// not fit).
int UnpaddedPositions(int in, int window, int stride) {
  return in >= window ? (in - window) / stride + 1 : 0;
}

void NoSettings(LayerSpec&, LayerSettingVisitor&) {}

void DenseSettings(LayerSpec& l, LayerSettingVisitor& v) {
  v.Int("units", &l.units, 1, kMaxSize, Required());
}
absl::StatusOr<Shape> DenseShape(const LayerSpec& l, const Shape&) { return Shape{l.units}; }
LayerTensors DenseTensors(const LayerSpec& l, const Shape& in, const Shape&,
                          const std::string& name) {
  return {{{name + ".weight", {in[0], l.units}}, {name + ".bias", {l.units}, ParamInit::kZeros}},
          {}};
}
std::unique_ptr<Layer> MakeDense(const LayerBuild& b) {
  return std::make_unique<DenseLayer>(b.tensors, b.name,
                                      DenseGeometry{b.in[0], b.spec.units, b.plan.relu});
}

void Conv2dSettings(LayerSpec& l, LayerSettingVisitor& v) {
  v.Int("filters", &l.filters, 1, kMaxSize, Required());
  v.Int("kernel", &l.kernel, 1, kMaxSize, Required());
  v.Int("stride", &l.stride, 1, kMaxSize, {"1", ""});
  v.Enum("padding", &l.padding, kPaddingNames, {"valid", "`valid`"});
}
absl::StatusOr<Shape> Conv2dShape(const LayerSpec& l, const Shape& in) {
  const Conv2dGeometry g = ConvGeometryOf(l, in);
  if (g.out_height < 1 || g.out_width < 1) {
    return absl::InvalidArgumentError(absl::StrCat("a ", l.kernel, "x", l.kernel,
                                                   " kernel does not fit its input ",
                                                   ShapeText(in), " unpadded"));
  }
  return Shape{g.filters, g.out_height, g.out_width};
}
LayerTensors Conv2dTensors(const LayerSpec& l, const Shape& in, const Shape&,
                           const std::string& name) {
  return {{{name + ".weight", {l.filters, in[0], l.kernel, l.kernel}},
           {name + ".bias", {l.filters}, ParamInit::kZeros}},
          {}};
}
std::unique_ptr<Layer> MakeConv2d(const LayerBuild& b) {
  Conv2dGeometry g = ConvGeometryOf(b.spec, b.in);
  g.in = b.plan.in;
  g.out = b.plan.out;
  g.relu = b.plan.relu;
  return std::make_unique<Conv2dLayer>(b.tensors, b.name, g, b.plan.dy_before_relu);
}

void PoolSettings(LayerSpec& l, LayerSettingVisitor& v) {
  v.Int("size", &l.size, 1, kMaxSize, Required());
  v.Int("stride", &l.stride, 1, kMaxSize, {absl::StrCat(l.size), "`size`"});
}
absl::StatusOr<Shape> PoolShape(const LayerSpec& l, const Shape& in) {
  const Pool2dGeometry g = PoolGeometryOf(l, in);
  if (g.out_height < 1 || g.out_width < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", l.size, "x", l.size, " window does not fit its input ", ShapeText(in)));
  }
  return Shape{g.channels, g.out_height, g.out_width};
}
std::unique_ptr<Layer> MakePool(PoolKind kind, const LayerBuild& b) {
  Pool2dGeometry g = PoolGeometryOf(b.spec, b.in);
  g.layout = b.plan.in;
  g.relu = b.plan.relu;
  return std::make_unique<Pool2dLayer>(kind, g);
}

void DropoutSettings(LayerSpec& l, LayerSettingVisitor& v) {
  v.Real("rate", &l.rate, 0, 1, Required());
}
std::unique_ptr<Layer> MakeDropout(const LayerBuild& b) {
  return std::make_unique<DropoutLayer>(static_cast<float>(b.spec.rate), ShapeSize(b.out));
}

absl::StatusOr<Shape> FlattenShape(const LayerSpec&, const Shape& in) {
  return Shape{ShapeSize(in)};
}
std::unique_ptr<Layer> MakeFlatten(const LayerBuild& b) {
  if (b.plan.in == Layout::kPlain) return nullptr;  // a plain input only changes its shape
  return std::make_unique<FlattenLayer>(b.in[0], b.in[1], b.in[2]);
}

void BatchNormSettings(LayerSpec& l, LayerSettingVisitor& v) {
  v.Real("momentum", &l.momentum, 0, 1, {"0.1", ""});
  v.Real("epsilon", &l.epsilon, 1e-12, 1, {"1e-05", "1e-5"});
}
LayerTensors BatchNormTensors(const LayerSpec&, const Shape& in, const Shape&,
                              const std::string& name) {
  const int channels = in[0];
  return {{{name + ".weight", {channels}, ParamInit::kOnes},
           {name + ".bias", {channels}, ParamInit::kZeros}},
          {{name + ".running_mean", {channels}, ParamInit::kZeros},
           {name + ".running_var", {channels}, ParamInit::kOnes}}};
}
std::unique_ptr<Layer> MakeBatchNorm(const LayerBuild& b) {
  BatchNormGeometry g;
  g.channels = b.in[0];
  g.pixels = ShapeSize(b.in) / b.in[0];
  g.momentum = static_cast<float>(b.spec.momentum);
  g.epsilon = static_cast<float>(b.spec.epsilon);
  g.layout = b.plan.in;
  g.relu = b.plan.relu;
  return std::make_unique<BatchNormLayer>(b.tensors, b.name, g, b.plan.dy_before_relu);
}

void ResidualSettings(LayerSpec& l, LayerSettingVisitor& v) {
  v.Layers("layers", &l.layers);
  v.Enum("shortcut", &l.shortcut, kShortcutNames, {"identity", "`identity`"});
}
// The stride of a 1x1 projection from `in` to `out` ([C, H, W] both), or 0 when none gives it.
int ProjectionStride(const Shape& in, const Shape& out) {
  if (in.size() != 3 || out.size() != 3) return 0;
  for (int stride = 1; stride <= in[1] && stride <= in[2]; ++stride) {
    if ((in[1] + stride - 1) / stride == out[1] && (in[2] + stride - 1) / stride == out[2]) {
      return stride;
    }
  }
  return 0;
}
absl::StatusOr<Shape> ResidualShape(const LayerSpec& l, const Shape& in) {
  if (l.layers.empty()) return absl::InvalidArgumentError("a residual block needs layers");
  MONSOON_ASSIGN_OR_RETURN(const std::vector<Shape> shapes, LayerListShapes(l.layers, in, "layers"));
  const Shape& out = shapes.back();
  if (l.shortcut == Shortcut::kIdentity && out != in) {
    return absl::InvalidArgumentError(
        absl::StrCat("its layers turn ", ShapeText(in), " into ", ShapeText(out),
                     ", which an identity shortcut cannot add; use shortcut: projection"));
  }
  if (l.shortcut == Shortcut::kProjection && ProjectionStride(in, out) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no 1x1 projection with a stride turns ", ShapeText(in), " into ",
                     ShapeText(out), " (the block's output)"));
  }
  return out;
}
// The body's tensors, then the projection's (named "res0.shortcut").
LayerTensors ResidualTensors(const LayerSpec& l, const Shape& in, const Shape& out,
                             const std::string& name) {
  LayerTensors all = LayerListTensors(l.layers, in, absl::StrCat(name, "."));
  if (l.shortcut == Shortcut::kProjection) {
    LayerTensors shortcut = Conv2dTensors(ProjectionOf(in, out), in, out, name + ".shortcut");
    for (ParamShape& p : shortcut.params) all.params.push_back(std::move(p));
  }
  return all;
}
std::unique_ptr<Layer> MakeResidual(const LayerBuild& b) {
  std::unique_ptr<Layer> projection;
  const std::string prefix = absl::StrCat(b.name, ".");
  if (b.spec.shortcut == Shortcut::kProjection) {
    LayerPlan plan;
    plan.in = plan.out = b.plan.in;
    const LayerSpec spec = ProjectionOf(b.in, b.out);
    const std::string name = prefix + "shortcut";
    projection = MakeConv2d({spec, b.in, b.out, plan, name, b.native_block,
                             Conv2dTensors(spec, b.in, b.out, name)});
  }
  return std::make_unique<ResidualLayer>(
      b.tensors, b.name,
      BuildLayerList(b.spec.layers, b.in, b.native_block, b.plan.in, prefix, nullptr),
      std::move(projection), ShapeSize(b.in));
}

absl::StatusOr<Shape> GlobalPoolShape(const LayerSpec&, const Shape& in) { return Shape{in[0]}; }
std::unique_ptr<Layer> MakeGlobalAvgPool(const LayerBuild& b) {
  return std::make_unique<GlobalAvgPoolLayer>(b.in[0], b.in[1], b.in[2], b.plan.in);
}

// An activation's settings: leaky_relu's slope; the others have none.
template <Activation F>
void ActivationSettings(LayerSpec& l, LayerSettingVisitor& v) {
  if constexpr (F == Activation::kLeakyRelu) v.Real("slope", &l.slope, 0, 1, {"0.01", ""});
}
template <Activation F>
std::unique_ptr<Layer> MakeActivation(const LayerBuild& b) {
  if (b.plan.fused) return nullptr;
  return std::make_unique<ActivationLayer>(ActivationFn{F, static_cast<float>(b.spec.slope)},
                                           ShapeSize(b.out));
}

const LayerKindDecl kDecls[] = {
    {LayerKind::kDense,
     "`y = x W + b`: Glorot-uniform weights `[in x units]`, zero biases; needs a flat input",
     DenseSettings, InputRank::kFlat, DenseShape, NativeLayout::kPlain, ReluFusion::kAlways,
     GradientThroughRelu::kNo, "dense", DenseTensors, MakeDense},
// clang-format off
#define MONSOON_ACTIVATION_DECL(kind, name, meaning)                                         \
  {LayerKind::kind, meaning, ActivationSettings<Activation::kind>, InputRank::kAny, nullptr,   \
   NativeLayout::kPasses, ReluFusion::kNo, GradientThroughRelu::kNo, nullptr, nullptr,       \
   MakeActivation<Activation::kind>},
    MONSOON_ACTIVATIONS(MONSOON_ACTIVATION_DECL)
#undef MONSOON_ACTIVATION_DECL
    // clang-format on
    {LayerKind::kFlatten, "a `[C, H, W]` input as one vector (channels first)", NoSettings,
     InputRank::kAny, FlattenShape, NativeLayout::kFlattens, ReluFusion::kNo,
     GradientThroughRelu::kNo, nullptr, nullptr, MakeFlatten},
    {LayerKind::kConv2d,
     "a 2-D convolution of a `[C, H, W]` input: `filters` kernels of `C x kernel x kernel` "
     "weights (Glorot-uniform over `filters` + `C·kernel²`) and a bias each; `same` pads with "
     "zeros so the output is `ceil(H / stride)` high (an odd padding row or column goes below "
     "and right), `valid` does not pad",
     Conv2dSettings, InputRank::kSpatial, Conv2dShape, NativeLayout::kProduces,
     ReluFusion::kOnNativeLayout, GradientThroughRelu::kNo, "conv", Conv2dTensors, MakeConv2d},
    {LayerKind::kMaxPool2d,
     "the largest value of each `size x size` window of each channel, "
     "unpadded",
     PoolSettings, InputRank::kSpatial, PoolShape, NativeLayout::kPasses, ReluFusion::kNo,
     GradientThroughRelu::kYes, nullptr, nullptr,
     [](const LayerBuild& b) { return MakePool(PoolKind::kMax, b); }},
    {LayerKind::kAvgPool2d,
     "the mean value of each `size x size` window of each channel, "
     "unpadded",
     PoolSettings, InputRank::kSpatial, PoolShape, NativeLayout::kPasses, ReluFusion::kNo,
     GradientThroughRelu::kYes, nullptr, nullptr,
     [](const LayerBuild& b) { return MakePool(PoolKind::kAverage, b); }},
    {LayerKind::kDropout,
     "while training, zeroes each value with probability `rate` and scales the rest by "
     "`1 / (1 - rate)`; the masks come from (seed, worker, step), so a replayed step draws the "
     "same; off when evaluating",
     DropoutSettings, InputRank::kAny, nullptr, NativeLayout::kPlain, ReluFusion::kNo,
     GradientThroughRelu::kNo, nullptr, nullptr, MakeDropout},
    {LayerKind::kGlobalAvgPool2d,
     "the mean of each channel's `H x W` values: `[C, H, W]` in, `[C]` out (a ResNet's last "
     "pooling)",
     NoSettings, InputRank::kSpatial, GlobalPoolShape, NativeLayout::kFlattens, ReluFusion::kNo,
     GradientThroughRelu::kNo, nullptr, nullptr, MakeGlobalAvgPool},
    {LayerKind::kBatchNorm,
     "batch normalisation of each channel of a `[C, H, W]` input (or each value of a flat one): "
     "`gamma (x - mean) / sqrt(var + epsilon) + beta`, trained `gamma` (ones) and `beta` "
     "(zeros); training uses the batch's statistics and moves the running mean and variance "
     "(`running = (1 - momentum) running + momentum batch`, as PyTorch), which evaluation "
     "uses and the servers hold as model state",
     BatchNormSettings, InputRank::kAny, nullptr, NativeLayout::kPasses,
     ReluFusion::kOnNativeLayout, GradientThroughRelu::kNo, "bn", BatchNormTensors, MakeBatchNorm},
    {LayerKind::kResidual,
     "a residual block: its `layers` (any of these kinds) applied in turn, plus the block's "
     "input through the shortcut: `identity`, or `projection`, a 1x1 convolution with a bias "
     "whose filters and stride give the layers' output shape; a ReLU after the block is a "
     "layer of its own",
     ResidualSettings, InputRank::kAny, ResidualShape, NativeLayout::kPasses, ReluFusion::kNo,
     GradientThroughRelu::kNo, "res", ResidualTensors, MakeResidual},
};

// Describes a kind's settings for README: "`filters`, `stride` (1), `padding` (`valid` or
// `same`; `valid`)".
class SettingsDoc : public LayerSettingVisitor {
 public:
  void Int(const char* key, int*, int, int, const SettingDefault& d) override { Add(key, "", d); }
  void Real(const char* key, double*, double min, double max, const SettingDefault& d) override {
    Add(key, absl::StrCat("in [", min, ", ", max, ")"), d);
  }
  void Choice(const char* key, std::string*, const std::vector<std::string>& allowed,
              const SettingDefault& d) override {
    Add(key, absl::StrCat("`", absl::StrJoin(allowed, "` or `"), "`"), d);
  }
  void Layers(const char* key, std::vector<LayerSpec>*) override { Add(key, "a list", {}); }
  std::string text() const { return parts_.empty() ? "—" : absl::StrJoin(parts_, ", "); }

 private:
  void Add(const char* key, const std::string& values, const SettingDefault& d) {
    std::vector<std::string> notes;
    if (!values.empty()) notes.push_back(values);
    if (!d.value.empty()) notes.push_back(d.shown.empty() ? d.value : d.shown);
    parts_.push_back(notes.empty() ? absl::StrCat("`", key, "`")
                                   : absl::StrCat("`", key, "` (", absl::StrJoin(notes, "; "),
                                                  ")"));
  }
  std::vector<std::string> parts_;
};

}  // namespace

LayerSpec ProjectionOf(const Shape& in, const Shape& out) {
  LayerSpec p;
  p.kind = LayerKind::kConv2d;
  p.filters = out[0];
  p.kernel = 1;
  p.stride = ProjectionStride(in, out);
  return p;
}

std::vector<std::string> TensorNames(const std::vector<LayerSpec>& specs,
                                     const std::string& prefix) {
  std::vector<std::string> names;
  std::map<LayerKind, int> counts;  // layers with parameters so far, per kind
  for (const LayerSpec& spec : specs) {
    const char* kind_prefix = DeclOf(spec.kind).param_prefix;
    names.push_back(kind_prefix == nullptr
                        ? ""
                        : absl::StrCat(prefix, kind_prefix, counts[spec.kind]++));
  }
  return names;
}

LayerTensors LayerListTensors(const std::vector<LayerSpec>& specs, const Shape& in,
                              const std::string& prefix) {
  const std::vector<Shape> shapes = LayerListShapes(specs, in, "").value_or(std::vector<Shape>());
  if (shapes.size() != specs.size()) return {};
  const std::vector<std::string> names = TensorNames(specs, prefix);
  LayerTensors all;
  Shape layer_in = in;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (const auto tensors = DeclOf(specs[i].kind).tensors) {
      LayerTensors t = tensors(specs[i], layer_in, shapes[i], names[i]);
      for (ParamShape& p : t.params) all.params.push_back(std::move(p));
      for (ParamShape& p : t.state) all.state.push_back(std::move(p));
    }
    layer_in = shapes[i];
  }
  return all;
}

const LayerKindDecl& DeclOf(LayerKind kind) {
  for (const LayerKindDecl& d : kDecls) {
    if (d.kind == kind) return d;
  }
  return kDecls[0];  // unreachable: every kind is declared (layer_kinds_test)
}

std::string ShapeText(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

int ShapeSize(const Shape& shape) {
  int n = 1;
  for (int d : shape) n *= d;
  return n;
}

absl::StatusOr<Shape> LayerOutputShape(const LayerSpec& l, const Shape& in) {
  const LayerKindDecl& d = DeclOf(l.kind);
  if (d.input == InputRank::kFlat && in.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("takes a flat input, got ", ShapeText(in), "; put a flatten before it"));
  }
  if (d.input == InputRank::kSpatial && in.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat("takes a (channels, height, width) input, got ",
                                                   ShapeText(in),
                                                   "; give model.input_shape as [C, H, W]"));
  }
  return d.output_shape == nullptr ? in : d.output_shape(l, in);
}

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

std::string LayerReferenceMarkdown() {
  std::string table = "| layer | settings | what it does |\n|---|---|---|\n";
  for (const LayerKindDecl& d : kDecls) {
    LayerSpec spec;
    spec.kind = d.kind;
    SettingsDoc doc;
    d.settings(spec, doc);
    absl::StrAppend(&table, "| `", kLayerKindNames.Name(d.kind), "` | ", doc.text(), " | ",
                    d.meaning, " |\n");
  }
  return table;
}

}  // namespace monsoon
