#include "core/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/conv_math.h"
#include "core/kernel_math.h"

namespace monsoon {

CpuBackend::CpuBackend(int blas_threads) : convolution_(blas_threads) {
  openblas_set_num_threads(blas_threads);
}

DeviceBuffer CpuBackend::Allocate(size_t n) {
  // 64-byte alignment keeps SIMD loads and BLAS panels aligned.
  const size_t bytes = std::max<size_t>(64, (n * sizeof(float) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return DeviceBuffer(static_cast<float*>(p), n, [](float* q) { std::free(q); });
}

void CpuBackend::CopyToDevice(const float* host, float* device, size_t n) {
  if (host != device) std::memcpy(device, host, n * sizeof(float));
}

void CpuBackend::CopyToHost(const float* device, float* host, size_t n) {
  if (host != device) std::memcpy(host, device, n * sizeof(float));
}

void CpuBackend::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      const float* b, float beta, float* c) {
  const int lda = trans_a ? m : k;
  const int ldb = trans_b ? k : n;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

void CpuBackend::AddBias(const float* bias, int rows, int cols, float* x) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

void CpuBackend::ColumnSum(const float* x, int rows, int cols, float* out) {
  std::fill(out, out + cols, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* row = x + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) out[c] += row[c];
  }
}

void CpuBackend::ActivationForward(Activation f, const float* x, float* y, size_t n) {
  switch (f) {
    case Activation::kRelu:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      return;
  }
}

void CpuBackend::ActivationBackward(Activation f, const float* y, const float* dy, float* dx,
                                    size_t n) {
  switch (f) {
    case Activation::kRelu:
      // dy[i] is read whatever y[i] is, so that the compiler selects instead of branching and
      // vectorises: a branch per element mispredicts on real activations (about half of them
      // zero, in no pattern), which made this loop 12 % of a training step's time.
      for (size_t i = 0; i < n; ++i) {
        const float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : 0.0f;
      }
      return;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      return;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      return;
  }
}

LossResult CpuBackend::SoftmaxCrossEntropy(const float* logits, const float* labels, int rows,
                                           int classes, float* dlogits) {
  LossResult result;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int r = 0; r < rows; ++r) {
    bool correct = false;
    result.loss_sum += SoftmaxCrossEntropyRow(logits + static_cast<size_t>(r) * classes,
                                              static_cast<int>(labels[r]), classes, inv_rows,
                                              dlogits + static_cast<size_t>(r) * classes, &correct);
    result.correct += correct ? 1 : 0;
  }
  return result;
}

LossResult CpuBackend::MeanSquaredError(const float* pred, const float* target, int rows, int cols,
                                        float* dpred) {
  LossResult result;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  const size_t n = static_cast<size_t>(rows) * cols;
  for (size_t i = 0; i < n; ++i) {
    const float diff = pred[i] - target[i];
    result.loss_sum += 0.5 * static_cast<double>(diff) * diff;
    dpred[i] = diff * inv_rows;
  }
  return result;
}

void CpuBackend::Axpy(float alpha, const float* x, float* y, size_t n) {
  cblas_saxpy(static_cast<int>(n), alpha, x, 1, y, 1);
}

void CpuBackend::NesterovStep(float learning_rate, float momentum, const float* g, float* v,
                              float* w, size_t n) {
  for (size_t i = 0; i < n; ++i) NesterovElement(learning_rate, momentum, g[i], &v[i], &w[i]);
}

}  // namespace monsoon

namespace monsoon {

void CpuBackend::Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                               const float* b, int batch, float* y) {
  convolution_.Forward(g, x, w, b, batch, y);
}

void CpuBackend::Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w,
                                const float* dy, int batch, float* dw, float* db, float* dx) {
  convolution_.Backward(g, x, w, dy, batch, dw, db, dx);
}

namespace {

// One channel plane of pooling: y[out_height x out_width] from x[height x width].
template <PoolKind kKind>
void PoolPlaneForward(const Pool2dGeometry& g, const float* x, float* y) {
  const float inverse_area = 1.0f / static_cast<float>(g.size * g.size);
  for (int oh = 0; oh < g.out_height; ++oh) {
    for (int ow = 0; ow < g.out_width; ++ow) {
      const float* corner = x + (oh * g.stride) * g.width + ow * g.stride;
      float acc = kKind == PoolKind::kMax ? corner[0] : 0.0f;
      for (int i = 0; i < g.size; ++i) {
        for (int j = 0; j < g.size; ++j) {
          const float v = corner[i * g.width + j];
          acc = kKind == PoolKind::kMax ? std::max(acc, v) : acc + v;
        }
      }
      y[oh * g.out_width + ow] = kKind == PoolKind::kMax ? acc : acc * inverse_area;
    }
  }
}

// PoolPlaneForward<kMax> for 2x2 windows with stride 2, the common case, in straight-line code
// the compiler vectorises.
void MaxPool2x2PlaneForward(const Pool2dGeometry& g, const float* x, float* y) {
  for (int oh = 0; oh < g.out_height; ++oh) {
    const float* top = x + 2 * oh * g.width;
    const float* bottom = top + g.width;
    float* out = y + oh * g.out_width;
    for (int ow = 0; ow < g.out_width; ++ow) {
      out[ow] = std::max(std::max(top[2 * ow], top[2 * ow + 1]),
                         std::max(bottom[2 * ow], bottom[2 * ow + 1]));
    }
  }
}

// One channel plane of the pooling gradient, dx[height x width] += the windows' shares of
// dy[out_height x out_width]: all of a window's to its (first) largest input under max pooling,
// an equal share to each input under average pooling. With `assign`, for windows that tile the
// plane without overlap, each window's inputs are written instead of added to.
template <PoolKind kKind, bool kAssign>
void PoolPlaneBackward(const Pool2dGeometry& g, const float* x, const float* dy, float* dx) {
  const float inverse_area = 1.0f / static_cast<float>(g.size * g.size);
  for (int oh = 0; oh < g.out_height; ++oh) {
    for (int ow = 0; ow < g.out_width; ++ow) {
      const int corner = (oh * g.stride) * g.width + ow * g.stride;
      const float d = dy[oh * g.out_width + ow];
      int best = corner;
      for (int i = 0; i < g.size; ++i) {
        for (int j = 0; j < g.size; ++j) {
          const int at = corner + i * g.width + j;
          if (x[at] > x[best]) best = at;
        }
      }
      for (int i = 0; i < g.size; ++i) {
        for (int j = 0; j < g.size; ++j) {
          const int at = corner + i * g.width + j;
          const float share = kKind == PoolKind::kAverage ? d * inverse_area : at == best ? d : 0;
          dx[at] = kAssign ? share : dx[at] + share;
        }
      }
    }
  }
}

// PoolPlaneBackward<kMax, true> for 2x2 windows with stride 2, the common case, in straight-line
// code the compiler vectorises.
void MaxPool2x2PlaneBackward(const Pool2dGeometry& g, const float* x, const float* dy, float* dx) {
  for (int oh = 0; oh < g.out_height; ++oh) {
    const float* top = x + 2 * oh * g.width;
    const float* bottom = top + g.width;
    float* dtop = dx + 2 * oh * g.width;
    float* dbottom = dtop + g.width;
    const float* grad = dy + oh * g.out_width;
    for (int ow = 0; ow < g.out_width; ++ow) {
      const float a = top[2 * ow], b = top[2 * ow + 1], c = bottom[2 * ow], e = bottom[2 * ow + 1];
      const float m = std::max(std::max(a, b), std::max(c, e));
      // Bitwise, not short-circuit, so that there is no branch to mispredict.
      const bool in_a = a == m, in_b = (b == m) & !in_a, in_c = (c == m) & !in_a & !in_b;
      const bool in_e = !in_a & !in_b & !in_c;
      const float d = grad[ow];
      dtop[2 * ow] = in_a ? d : 0.0f;
      dtop[2 * ow + 1] = in_b ? d : 0.0f;
      dbottom[2 * ow] = in_c ? d : 0.0f;
      dbottom[2 * ow + 1] = in_e ? d : 0.0f;
    }
  }
}

template <PoolKind kKind>
void PoolBackward(const Pool2dGeometry& g, const float* x, const float* dy, int batch, float* dx) {
  const size_t in_plane = static_cast<size_t>(g.height) * g.width;
  const size_t out_plane = static_cast<size_t>(g.out_height) * g.out_width;
  // Windows that tile the plane exactly write every input once: nothing to clear or add.
  const bool tiles =
      g.stride == g.size && g.out_height * g.size == g.height && g.out_width * g.size == g.width;
  if (!tiles) std::fill(dx, dx + batch * g.channels * in_plane, 0.0f);
  for (int plane = 0; plane < batch * g.channels; ++plane) {
    const float* in = x + plane * in_plane;
    const float* grad = dy + plane * out_plane;
    if (tiles && kKind == PoolKind::kMax && g.size == 2) {
      MaxPool2x2PlaneBackward(g, in, grad, dx + plane * in_plane);
    } else if (tiles) {
      PoolPlaneBackward<kKind, true>(g, in, grad, dx + plane * in_plane);
    } else {
      PoolPlaneBackward<kKind, false>(g, in, grad, dx + plane * in_plane);
    }
  }
}

}  // namespace

void CpuBackend::Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch,
                               float* y) {
  const size_t in_plane = static_cast<size_t>(g.height) * g.width;
  const size_t out_plane = static_cast<size_t>(g.out_height) * g.out_width;
  for (int plane = 0; plane < batch * g.channels; ++plane) {
    if (kind == PoolKind::kMax && g.size == 2 && g.stride == 2) {
      MaxPool2x2PlaneForward(g, x + plane * in_plane, y + plane * out_plane);
    } else if (kind == PoolKind::kMax) {
      PoolPlaneForward<PoolKind::kMax>(g, x + plane * in_plane, y + plane * out_plane);
    } else {
      PoolPlaneForward<PoolKind::kAverage>(g, x + plane * in_plane, y + plane * out_plane);
    }
  }
}

void CpuBackend::Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                                const float* dy, int batch, float* dx) {
  if (kind == PoolKind::kMax) {
    PoolBackward<PoolKind::kMax>(g, x, dy, batch, dx);
  } else {
    PoolBackward<PoolKind::kAverage>(g, x, dy, batch, dx);
  }
}

void CpuBackend::DropoutForward(float rate, uint64_t seed, const float* x, float* mask, float* y,
                                size_t n) {
  for (size_t i = 0; i < n; ++i) {
    mask[i] = DropoutScale(rate, seed, i);
    y[i] = x[i] * mask[i];
  }
}

void CpuBackend::DropoutBackward(const float* mask, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace monsoon
