#include "core/compute/cpu/onednn_convolution.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>

#include "core/compute/cpu/onednn_common.h"

namespace monsoon {
namespace {

using dnnl::memory;
using onednn::Desc;
using onednn::HeldDesc;
using onednn::NativeTag;
using onednn::Tag;

// A tensor in Monsoon's layout (`user`, pointed at the caller's buffer on each call) and in
// the layout a primitive wants (`internal`: the same memory when the two agree).
class Tensor {
 public:
  Tensor(const memory::desc& user, const memory::desc& internal, const dnnl::engine& engine)
      : engine_(engine),
        user_(user, engine, DNNL_MEMORY_NONE),
        internal_(internal == user ? user_ : memory(internal, engine)) {
    if (internal != user) {
      to_internal_ = dnnl::reorder(user_, internal_);
      to_user_ = dnnl::reorder(internal_, user_);
    }
  }
  const memory& internal() const { return internal_; }

  // Points at `data` and copies it into the internal layout.
  void In(const float* data, dnnl::stream& stream) {
    user_.set_data_handle(const_cast<float*>(data));  // oneDNN only reads sources
    if (to_internal_) to_internal_.execute(stream, user_, internal_);
  }
  // Points the internal layout at a buffer of its own where it shares the caller's (for
  // running the primitives alone).
  void UseScratch() {
    if (to_internal_) return;
    if (!scratch_) scratch_ = memory(user_.get_desc(), engine_);
    user_.set_data_handle(scratch_.get_data_handle());
  }
  // Points at `data`, where a primitive's output goes (directly when the layouts agree):
  // called before the primitive runs, Out after.
  void Target(float* data) { user_.set_data_handle(data); }
  // Copies the internal layout (which a primitive wrote) out to the target.
  void Out(dnnl::stream& stream) {
    if (to_user_) to_user_.execute(stream, internal_, user_);
  }

 private:
  dnnl::engine engine_;
  memory user_;
  memory internal_;
  memory scratch_;                       // UseScratch's
  dnnl::reorder to_internal_, to_user_;  // empty when the layouts agree
};

// An activation's layout for a primitive: the native one, or the primitive's choice.
memory::desc ActivationDesc(const memory::dims& dims, bool native) {
  return Desc(dims, native ? NativeTag() : Tag::any);
}

// The forward convolution's attributes: a fused ReLU where the geometry asks for one.
dnnl::primitive_attr ForwardAttributes(const Conv2dGeometry& g) {
  dnnl::primitive_attr attributes;
  if (g.relu == FusedRelu::kOnOutput) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attributes.set_post_ops(ops);
  }
  return attributes;
}

}  // namespace

struct OneDnnConvolution::Primitives {
  Primitives(const Conv2dGeometry& g, int batch, const dnnl::engine& engine);

  // Each primitive on the internal tensors (their data in place) and b / db's handles.
  void RunForward(dnnl::stream& s) {
    forward.execute(s, {{DNNL_ARG_SRC, x.internal()},
                        {DNNL_ARG_WEIGHTS, w.internal()},
                        {DNNL_ARG_BIAS, b},
                        {DNNL_ARG_DST, y.internal()}});
  }
  void RunBackwardWeights(dnnl::stream& s) {
    backward_weights.execute(s, {{DNNL_ARG_SRC, weights_x.internal()},
                                 {DNNL_ARG_DIFF_DST, weights_dy.internal()},
                                 {DNNL_ARG_DIFF_WEIGHTS, dw.internal()},
                                 {DNNL_ARG_DIFF_BIAS, db}});
  }
  void RunBackwardData(dnnl::stream& s) {
    backward_data.execute(s, {{DNNL_ARG_DIFF_DST, (own_data_dy ? data_dy : weights_dy).internal()},
                              {DNNL_ARG_WEIGHTS, data_w.internal()},
                              {DNNL_ARG_DIFF_SRC, dx.internal()}});
  }

  memory::dims src, weights, bias, dst, strides, left, right;
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  // forward
  Tensor x, w, y;
  // backward-weights: its own layouts of x and dy
  Tensor weights_x, weights_dy, dw;
  // backward-data
  Tensor data_dy, data_w, dx;
  memory b, db;  // [filters]: one layout
  // Backward-data reads dy in its own copy only when it wants another layout than
  // backward-weights (oneDNN usually wants the same).
  bool own_data_dy;
};

OneDnnConvolution::Primitives::Primitives(const Conv2dGeometry& g, int batch,
                                          const dnnl::engine& engine)
    : src{batch, g.channels, g.height, g.width},
      weights{g.filters, g.channels, g.kernel, g.kernel},
      bias{g.filters},
      dst{batch, g.filters, g.out_height, g.out_width},
      strides{g.stride, g.stride},
      left{g.pad_top, g.pad_left},
      // Padding below and right: whatever makes the output (out_height, out_width); none when
      // the last window ends inside the input.
      right{std::max(0, (g.out_height - 1) * g.stride + g.kernel - g.height - g.pad_top),
            std::max(0, (g.out_width - 1) * g.stride + g.kernel - g.width - g.pad_left)},
      forward_pd(dnnl::convolution_forward::desc(
                     dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                     ActivationDesc(src, g.in == Layout::kNative), Desc(weights, Tag::any), Desc(bias, Tag::x),
                     ActivationDesc(dst, g.out == Layout::kNative), strides, left, right),
                 ForwardAttributes(g), engine),
      data_pd(dnnl::convolution_backward_data::desc(
                  dnnl::algorithm::convolution_direct, ActivationDesc(src, g.in == Layout::kNative),
                  Desc(weights, Tag::any), ActivationDesc(dst, g.out == Layout::kNative), strides, left, right),
              engine, forward_pd),
      weights_pd(dnnl::convolution_backward_weights::desc(
                     dnnl::algorithm::convolution_direct, ActivationDesc(src, g.in == Layout::kNative),
                     Desc(weights, Tag::any), Desc(bias, Tag::x), ActivationDesc(dst, g.out == Layout::kNative),
                     strides, left, right),
                 engine, forward_pd),
      forward(forward_pd),
      backward_data(data_pd),
      backward_weights(weights_pd),
      x(HeldDesc(src, g.in == Layout::kNative), forward_pd.src_desc(), engine),
      w(Desc(weights, Tag::oihw), forward_pd.weights_desc(), engine),
      y(HeldDesc(dst, g.out == Layout::kNative), forward_pd.dst_desc(), engine),
      weights_x(HeldDesc(src, g.in == Layout::kNative), weights_pd.src_desc(), engine),
      weights_dy(HeldDesc(dst, g.out == Layout::kNative), weights_pd.diff_dst_desc(), engine),
      dw(Desc(weights, Tag::oihw), weights_pd.diff_weights_desc(), engine),
      data_dy(HeldDesc(dst, g.out == Layout::kNative), data_pd.diff_dst_desc(), engine),
      data_w(Desc(weights, Tag::oihw), data_pd.weights_desc(), engine),
      dx(HeldDesc(src, g.in == Layout::kNative), data_pd.diff_src_desc(), engine),
      b(Desc(bias, Tag::x), engine, DNNL_MEMORY_NONE),
      db(Desc(bias, Tag::x), engine, DNNL_MEMORY_NONE),
      own_data_dy(data_pd.diff_dst_desc() != weights_pd.diff_dst_desc()) {}

OneDnnConvolution::OneDnnConvolution(int threads)
    : engine_(std::make_unique<onednn::Engine>()), threads_(threads) {}

int OneDnnConvolution::NativeChannelBlock() { return onednn::NativeChannelBlock(); }

OneDnnConvolution::~OneDnnConvolution() = default;

OneDnnConvolution::Primitives& OneDnnConvolution::For(const Conv2dGeometry& g, int batch) {
  // Every field of the geometry: a `same` and a `valid` convolution can differ only in the
  // output's size, and a primitive made for one writes the other's whole output.
  const Key key{g.channels, g.height,    g.width,      g.filters, g.kernel,
                g.stride,   g.pad_top,   g.pad_left,   g.out_height, g.out_width,
                batch,      g.in,        g.out,        g.relu};
  std::unique_ptr<Primitives>& p = cache_[key];
  if (p == nullptr) p = std::make_unique<Primitives>(g, batch, engine_->engine);
  return *p;
}

void OneDnnConvolution::Forward(const Conv2dGeometry& g, const float* x, const float* w,
                                const float* b, int batch, float* y) {
  omp_set_num_threads(threads_);
  Primitives& p = For(g, batch);
  dnnl::stream& s = engine_->stream;
  p.x.In(x, s);
  p.w.In(w, s);
  p.b.set_data_handle(const_cast<float*>(b));
  p.y.Target(y);
  p.RunForward(s);
  p.y.Out(s);
  s.wait();
}

void OneDnnConvolution::Backward(const Conv2dGeometry& g, const float* x, const float* w,
                                 const float* dy, int batch, float* dw, float* db, float* dx) {
  omp_set_num_threads(threads_);
  Primitives& p = For(g, batch);
  dnnl::stream& s = engine_->stream;
  p.weights_x.In(x, s);
  p.weights_dy.In(dy, s);
  p.db.set_data_handle(db);
  p.dw.Target(dw);
  p.RunBackwardWeights(s);
  p.dw.Out(s);
  if (dx != nullptr) {
    if (p.own_data_dy) p.data_dy.In(dy, s);
    p.data_w.In(w, s);
    p.dx.Target(dx);
    p.RunBackwardData(s);
    p.dx.Out(s);
  }
  s.wait();
}

void OneDnnConvolution::RunPrimitives(const Conv2dGeometry& g, int batch, bool input_gradient) {
  omp_set_num_threads(threads_);
  Primitives& p = For(g, batch);
  dnnl::stream& s = engine_->stream;
  for (Tensor* t :
       {&p.x, &p.w, &p.y, &p.weights_x, &p.weights_dy, &p.dw, &p.data_dy, &p.data_w, &p.dx}) {
    t->UseScratch();
  }
  bias_scratch_.assign(2 * g.filters, 0.0f);
  p.b.set_data_handle(bias_scratch_.data());
  p.db.set_data_handle(bias_scratch_.data() + g.filters);
  p.RunForward(s);
  p.RunBackwardWeights(s);
  if (input_gradient) p.RunBackwardData(s);
  s.wait();
}

}  // namespace monsoon
