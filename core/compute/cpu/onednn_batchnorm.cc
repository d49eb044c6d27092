#include "core/compute/cpu/onednn_batchnorm.h"

#include <omp.h>

#include <cmath>
#include <dnnl.hpp>
#include <vector>

#include "core/compute/cpu/onednn_common.h"
#include "core/compute/kernel_math.h"

namespace monsoon {
namespace {

using dnnl::memory;
using Flags = dnnl::normalization_flags;

// The flags of every primitive here: gamma and beta as vectors of their own; the running
// statistics for evaluation; the ReLU fused where asked (forward only: backward takes the
// gradient before the ReLU).
Flags FlagsFor(bool training, bool relu) {
  Flags flags = Flags::use_scale | Flags::use_shift;
  if (!training) flags |= Flags::use_global_stats;
  if (relu) flags |= Flags::fuse_norm_relu;
  return flags;
}

dnnl::batch_normalization_forward::primitive_desc ForwardPd(const memory::desc& data,
                                                            float epsilon, bool training,
                                                            bool relu, const dnnl::engine& e) {
  const dnnl::prop_kind prop =
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  return {{prop, data, epsilon, FlagsFor(training, relu)}, e};
}

dnnl::batch_normalization_backward::primitive_desc BackwardPd(const memory::desc& data,
                                                              float epsilon, bool training,
                                                              const dnnl::engine& e) {
  return {{dnnl::prop_kind::backward, data, data, epsilon, FlagsFor(training, false)}, e,
          ForwardPd(data, epsilon, training, false, e)};
}

}  // namespace

struct OneDnnBatchNorm::Primitives {
  Primitives(const BatchNormGeometry& g, int batch, const dnnl::engine& engine)
      : data(onednn::HeldDesc({batch, g.channels, g.pixels, 1}, g.layout == Layout::kNative)),
        stats(onednn::Desc({g.channels}, onednn::Tag::x)),
        train_pd(ForwardPd(data, g.epsilon, true, g.relu == FusedRelu::kOnOutput, engine)),
        train(train_pd),
        eval(ForwardPd(data, g.epsilon, false, g.relu == FusedRelu::kOnOutput, engine)),
        train_back(BackwardPd(data, g.epsilon, true, engine)),
        eval_back(BackwardPd(data, g.epsilon, false, engine)),
        x(data, engine, DNNL_MEMORY_NONE),
        y(data, engine, DNNL_MEMORY_NONE),
        dy(data, engine, DNNL_MEMORY_NONE),
        dx(data, engine, DNNL_MEMORY_NONE),
        mean(stats, engine, DNNL_MEMORY_NONE),
        variance(stats, engine),
        scale(stats, engine, DNNL_MEMORY_NONE),
        shift(stats, engine, DNNL_MEMORY_NONE),
        dscale(stats, engine, DNNL_MEMORY_NONE),
        dshift(stats, engine, DNNL_MEMORY_NONE),
        workspace(train_pd.workspace_desc(), engine) {}

  void RunForward(bool training, dnnl::stream& s) {
    (training ? train : eval)
        .execute(s, {{DNNL_ARG_SRC, x},
                     {DNNL_ARG_DST, y},
                     {DNNL_ARG_SCALE, scale},
                     {DNNL_ARG_SHIFT, shift},
                     {DNNL_ARG_MEAN, mean},
                     {DNNL_ARG_VARIANCE, variance},
                     {DNNL_ARG_WORKSPACE, workspace}});
  }
  void RunBackward(bool training, dnnl::stream& s) {
    (training ? train_back : eval_back)
        .execute(s, {{DNNL_ARG_SRC, x},
                     {DNNL_ARG_MEAN, mean},
                     {DNNL_ARG_VARIANCE, variance},
                     {DNNL_ARG_DIFF_DST, dy},
                     {DNNL_ARG_SCALE, scale},
                     // oneDNN wants beta here too, but backward never reads it.
                     {DNNL_ARG_SHIFT, scale},
                     {DNNL_ARG_DIFF_SRC, dx},
                     {DNNL_ARG_DIFF_SCALE, dscale},
                     {DNNL_ARG_DIFF_SHIFT, dshift}});
  }
  float* Variance() { return static_cast<float*>(variance.get_data_handle()); }
  // dx's target when the caller wants none (backward writes it all the same).
  float* ScratchDx() {
    if (!dx_scratch) dx_scratch = memory(data, x.get_engine());
    return static_cast<float*>(dx_scratch.get_data_handle());
  }

  memory::desc data, stats;
  dnnl::batch_normalization_forward::primitive_desc train_pd;
  dnnl::batch_normalization_forward train, eval;
  dnnl::batch_normalization_backward train_back, eval_back;
  // The caller's buffers, pointed at on each call; variance and workspace are this object's.
  memory x, y, dy, dx, mean, variance, scale, shift, dscale, dshift, workspace;
  memory dx_scratch;
};

OneDnnBatchNorm::OneDnnBatchNorm(int threads)
    : engine_(std::make_unique<onednn::Engine>()), threads_(threads) {}

OneDnnBatchNorm::~OneDnnBatchNorm() = default;

OneDnnBatchNorm::Primitives& OneDnnBatchNorm::For(const BatchNormGeometry& g, int batch) {
  const Key key{g.channels, g.pixels, g.epsilon, g.layout, g.relu, batch};
  std::unique_ptr<Primitives>& p = cache_[key];
  if (p == nullptr) p = std::make_unique<Primitives>(g, batch, engine_->engine);
  return *p;
}

void OneDnnBatchNorm::Forward(const BatchNormGeometry& g, bool training, const float* x,
                              const float* gamma, const float* beta, float* running_mean,
                              float* running_var, int batch, float* y, float* mean,
                              float* invstd) {
  omp_set_num_threads(threads_);
  Primitives& p = For(g, batch);
  p.x.set_data_handle(const_cast<float*>(x));  // oneDNN only reads sources
  p.y.set_data_handle(y);
  p.scale.set_data_handle(const_cast<float*>(gamma));
  p.shift.set_data_handle(const_cast<float*>(beta));
  float* variance = p.Variance();
  if (training) {
    p.mean.set_data_handle(mean);
  } else {
    p.mean.set_data_handle(running_mean);
    std::copy(running_var, running_var + g.channels, variance);
  }
  p.RunForward(training, engine_->stream);
  engine_->stream.wait();
  const double count = static_cast<double>(batch) * g.pixels;
  for (int c = 0; c < g.channels; ++c) {
    if (training) {
      BatchNormRunningUpdate(g.momentum, mean[c], variance[c], count, &running_mean[c],
                             &running_var[c]);
    } else {
      mean[c] = running_mean[c];
    }
    invstd[c] = 1.0f / std::sqrt(variance[c] + g.epsilon);
  }
}

void OneDnnBatchNorm::Backward(const BatchNormGeometry& g, bool training, const float* x,
                               const float* gamma, const float* mean, const float* invstd,
                               const float* dy, int batch, float* dgamma, float* dbeta,
                               float* dx) {
  omp_set_num_threads(threads_);
  Primitives& p = For(g, batch);
  float* variance = p.Variance();
  for (int c = 0; c < g.channels; ++c) variance[c] = 1.0f / (invstd[c] * invstd[c]) - g.epsilon;
  p.x.set_data_handle(const_cast<float*>(x));
  p.mean.set_data_handle(const_cast<float*>(mean));
  p.dy.set_data_handle(const_cast<float*>(dy));
  p.scale.set_data_handle(const_cast<float*>(gamma));
  p.dx.set_data_handle(dx != nullptr ? dx : p.ScratchDx());
  p.dscale.set_data_handle(dgamma);
  p.dshift.set_data_handle(dbeta);
  p.RunBackward(training, engine_->stream);
  engine_->stream.wait();
}

void OneDnnBatchNorm::RunPrimitives(const BatchNormGeometry& g, int batch) {
  omp_set_num_threads(threads_);
  Primitives& p = For(g, batch);
  const dnnl::engine& e = engine_->engine;
  for (memory* m : {&p.x, &p.y, &p.dy, &p.dx}) *m = memory(p.data, e);
  for (memory* m : {&p.mean, &p.scale, &p.shift, &p.dscale, &p.dshift}) *m = memory(p.stats, e);
  p.RunForward(true, engine_->stream);
  p.RunBackward(true, engine_->stream);
  engine_->stream.wait();
}

}  // namespace monsoon
