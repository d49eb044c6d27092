#include "core/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/kernel_math.h"

namespace monsoon {

CpuBackend::CpuBackend(int blas_threads) { openblas_set_num_threads(blas_threads); }

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
namespace {

// Example x's patches as the columns of cols [patch x out pixels]; padding reads as zero.
void Im2Col(const Conv2dGeometry& g, const float* x, float* cols) {
  const int pixels = g.out_height * g.out_width;
  for (int c = 0; c < g.channels; ++c) {
    for (int kh = 0; kh < g.kernel; ++kh) {
      for (int kw = 0; kw < g.kernel; ++kw) {
        float* row = cols + static_cast<size_t>((c * g.kernel + kh) * g.kernel + kw) * pixels;
        for (int oh = 0; oh < g.out_height; ++oh) {
          const int ih = oh * g.stride - g.pad_top + kh;
          for (int ow = 0; ow < g.out_width; ++ow) {
            const int iw = ow * g.stride - g.pad_left + kw;
            const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
            row[oh * g.out_width + ow] =
                inside ? x[(static_cast<size_t>(c) * g.height + ih) * g.width + iw] : 0.0f;
          }
        }
      }
    }
  }
}

// The adjoint of Im2Col: adds each column entry back to the input pixel it was read from
// (dx is zeroed first).
void Col2Im(const Conv2dGeometry& g, const float* cols, float* dx) {
  std::fill(dx, dx + static_cast<size_t>(g.channels) * g.height * g.width, 0.0f);
  const int pixels = g.out_height * g.out_width;
  for (int c = 0; c < g.channels; ++c) {
    for (int kh = 0; kh < g.kernel; ++kh) {
      for (int kw = 0; kw < g.kernel; ++kw) {
        const float* row = cols + static_cast<size_t>((c * g.kernel + kh) * g.kernel + kw) * pixels;
        for (int oh = 0; oh < g.out_height; ++oh) {
          const int ih = oh * g.stride - g.pad_top + kh;
          if (ih < 0 || ih >= g.height) continue;
          for (int ow = 0; ow < g.out_width; ++ow) {
            const int iw = ow * g.stride - g.pad_left + kw;
            if (iw < 0 || iw >= g.width) continue;
            dx[(static_cast<size_t>(c) * g.height + ih) * g.width + iw] +=
                row[oh * g.out_width + ow];
          }
        }
      }
    }
  }
}

size_t InputSize(const Conv2dGeometry& g) {
  return static_cast<size_t>(g.channels) * g.height * g.width;
}
size_t OutputSize(const Conv2dGeometry& g) {
  return static_cast<size_t>(g.filters) * g.out_height * g.out_width;
}

}  // namespace

void CpuBackend::Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                               const float* b, int batch, float* y) {
  const int pixels = g.out_height * g.out_width;
  columns_.resize(static_cast<size_t>(g.patch()) * pixels);
  for (int n = 0; n < batch; ++n) {
    float* out = y + n * OutputSize(g);
    Im2Col(g, x + n * InputSize(g), columns_.data());
    Gemm(false, false, g.filters, pixels, g.patch(), 1.0f, w, columns_.data(), 0.0f, out);
    for (int f = 0; f < g.filters; ++f) {
      float* plane = out + static_cast<size_t>(f) * pixels;
      for (int p = 0; p < pixels; ++p) plane[p] += b[f];
    }
  }
}

void CpuBackend::Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w,
                                const float* dy, int batch, float* dw, float* db, float* dx) {
  const int pixels = g.out_height * g.out_width;
  columns_.resize(static_cast<size_t>(g.patch()) * pixels);
  if (dx != nullptr) column_gradients_.resize(columns_.size());
  std::fill(db, db + g.filters, 0.0f);
  for (int n = 0; n < batch; ++n) {
    const float* grad = dy + n * OutputSize(g);
    Im2Col(g, x + n * InputSize(g), columns_.data());
    // dw (+)= dy_n cols^T; db += the rows' sums; dcols = w^T dy_n, back to dx_n.
    Gemm(false, true, g.filters, g.patch(), pixels, 1.0f, grad, columns_.data(),
         n == 0 ? 0.0f : 1.0f, dw);
    for (int f = 0; f < g.filters; ++f) {
      const float* plane = grad + static_cast<size_t>(f) * pixels;
      for (int p = 0; p < pixels; ++p) db[f] += plane[p];
    }
    if (dx == nullptr) continue;
    Gemm(true, false, g.patch(), pixels, g.filters, 1.0f, w, grad, 0.0f, column_gradients_.data());
    Col2Im(g, column_gradients_.data(), dx + n * InputSize(g));
  }
}

void CpuBackend::Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch,
                               float* y) {
  const float inverse_area = 1.0f / static_cast<float>(g.size * g.size);
  for (int plane = 0; plane < batch * g.channels; ++plane) {
    const float* in = x + static_cast<size_t>(plane) * g.height * g.width;
    float* out = y + static_cast<size_t>(plane) * g.out_height * g.out_width;
    for (int oh = 0; oh < g.out_height; ++oh) {
      for (int ow = 0; ow < g.out_width; ++ow) {
        const float* corner = in + (oh * g.stride) * g.width + ow * g.stride;
        float acc = kind == PoolKind::kMax ? corner[0] : 0.0f;
        for (int i = 0; i < g.size; ++i) {
          for (int j = 0; j < g.size; ++j) {
            const float v = corner[i * g.width + j];
            acc = kind == PoolKind::kMax ? std::max(acc, v) : acc + v;
          }
        }
        out[oh * g.out_width + ow] = kind == PoolKind::kMax ? acc : acc * inverse_area;
      }
    }
  }
}

void CpuBackend::Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                                const float* dy, int batch, float* dx) {
  const float inverse_area = 1.0f / static_cast<float>(g.size * g.size);
  std::fill(dx, dx + static_cast<size_t>(batch) * g.channels * g.height * g.width, 0.0f);
  for (int plane = 0; plane < batch * g.channels; ++plane) {
    const size_t in_offset = static_cast<size_t>(plane) * g.height * g.width;
    const float* grad = dy + static_cast<size_t>(plane) * g.out_height * g.out_width;
    for (int oh = 0; oh < g.out_height; ++oh) {
      for (int ow = 0; ow < g.out_width; ++ow) {
        const size_t corner = in_offset + (oh * g.stride) * g.width + ow * g.stride;
        const float d = grad[oh * g.out_width + ow];
        size_t best = corner;
        for (int i = 0; i < g.size; ++i) {
          for (int j = 0; j < g.size; ++j) {
            const size_t at = corner + i * g.width + j;
            if (kind == PoolKind::kAverage) dx[at] += d * inverse_area;
            if (x[at] > x[best]) best = at;
          }
        }
        if (kind == PoolKind::kMax) dx[best] += d;
      }
    }
  }
}

void CpuBackend::DropoutForward(float rate, uint64_t seed, const float* x, float* mask, float* y,
                                size_t n) {
  const float keep_scale = 1.0f / (1.0f - rate);
  for (size_t i = 0; i < n; ++i) {
    mask[i] = UniformHash(seed, i) >= rate ? keep_scale : 0.0f;
    y[i] = x[i] * mask[i];
  }
}

void CpuBackend::DropoutBackward(const float* mask, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace monsoon
