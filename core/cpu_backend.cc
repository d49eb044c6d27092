#include "core/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/conv_math.h"
#include "core/kernel_math.h"

namespace monsoon {

CpuBackend::CpuBackend(int blas_threads, bool native_layouts)
    : convolution_(blas_threads), native_layouts_(native_layouts) {
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

int CpuBackend::NativeChannelBlock() const {
  return native_layouts_ ? OneDnnConvolution::NativeChannelBlock() : 0;
}

namespace {

// [groups x B x pixels] to [groups x pixels x B] (to_native) or back.
template <int B>
void ConvertBlocks(size_t groups, size_t pixels, bool to_native, const float* x, float* y) {
  for (size_t n = 0; n < groups; ++n, x += B * pixels, y += B * pixels) {
    for (size_t p = 0; p < pixels; ++p) {
      for (int b = 0; b < B; ++b) {
        if (to_native) {
          y[p * B + b] = x[b * pixels + p];
        } else {
          y[b * pixels + p] = x[p * B + b];
        }
      }
    }
  }
}

}  // namespace

void CpuBackend::ConvertLayout(int channels, int height, int width, int batch, bool to_native,
                               const float* x, float* y) {
  const int block = NativeChannelBlock();
  const size_t groups = static_cast<size_t>(batch) * channels / block;
  const size_t pixels = static_cast<size_t>(height) * width;
  return block == 16 ? ConvertBlocks<16>(groups, pixels, to_native, x, y)
                     : ConvertBlocks<8>(groups, pixels, to_native, x, y);
}

void CpuBackend::Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                               const float* b, int batch, float* y) {
  convolution_.Forward(g, x, w, b, batch, y);
}

void CpuBackend::Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w,
                                const float* dy, int batch, float* dw, float* db, float* dx) {
  convolution_.Backward(g, x, w, dy, batch, dw, db, dx);
}

namespace {

// Max pooling over 2x2 windows with stride 2, the common case, in straight-line code the
// compiler vectorises; other windows run core/conv_math.h's per-element functions, as the
// CUDA kernels do.
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

// The gradient of MaxPool2x2PlaneForward where the windows tile the plane: each input gets its
// window's dy if it is the window's first largest value, else 0.
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

bool IsMaxPool2x2(const Pool2dGeometry& g, PoolKind kind) {
  return kind == PoolKind::kMax && g.size == 2 && g.stride == 2;
}

// Pooling in the native layout [batch x C/B x H x W x B]: each window's B channels at once,
// with the results of PoolForwardElement and PoolBackwardElement (the same sums in the same
// order; a max window's gradient to its first largest input, row by row).
// 2x2 windows with stride 2 (max pooling's common case), straight-line over the B lanes.
template <int B>
void NativeMaxPool2x2Forward(const Pool2dGeometry& g, size_t groups, const float* x, float* y) {
  const size_t row = static_cast<size_t>(g.width) * B;
  for (size_t n = 0; n < groups; ++n) {
    const float* in = x + n * g.height * row;
    float* out = y + n * g.out_height * g.out_width * B;
    for (int oh = 0; oh < g.out_height; ++oh) {
      const float* top = in + 2 * oh * row;
      for (int ow = 0; ow < g.out_width; ++ow, out += B) {
        const float* a = top + 2 * ow * B;
        const float* c = a + row;
        for (int b = 0; b < B; ++b) {
          out[b] = std::max(std::max(a[b], a[b + B]), std::max(c[b], c[b + B]));
        }
      }
    }
  }
}

// One 2x2 window of NativeMaxPool2x2Backward: its top row a[0, 2B), bottom row c[0, 2B) and
// their gradients; each lane's dy goes to the first input equal to the window's maximum.
// Bit masks, never arithmetic on dy (tiny gradients are denormal, and arithmetic on them is
// slow) nor branches (ties and maxima fall in no pattern): SSE2 four lanes at a time, which
// GCC does not find by itself here.
template <int B>
void MaxPool2x2WindowBackward(const float* a, const float* c, const float* grad, float* da,
                              float* dc) {
#if defined(__SSE2__)
  for (int l = 0; l < B; l += 4) {
    const __m128 a0 = _mm_loadu_ps(a + l), a1 = _mm_loadu_ps(a + l + B);
    const __m128 c0 = _mm_loadu_ps(c + l), c1 = _mm_loadu_ps(c + l + B);
    const __m128 d = _mm_loadu_ps(grad + l);
    const __m128 m = _mm_max_ps(_mm_max_ps(a0, a1), _mm_max_ps(c0, c1));
    const __m128 first = _mm_cmpeq_ps(a0, m);
    const __m128 second = _mm_andnot_ps(first, _mm_cmpeq_ps(a1, m));
    __m128 taken = _mm_or_ps(first, second);
    const __m128 third = _mm_andnot_ps(taken, _mm_cmpeq_ps(c0, m));
    taken = _mm_or_ps(taken, third);
    _mm_storeu_ps(da + l, _mm_and_ps(first, d));
    _mm_storeu_ps(da + l + B, _mm_and_ps(second, d));
    _mm_storeu_ps(dc + l, _mm_and_ps(third, d));
    _mm_storeu_ps(dc + l + B, _mm_andnot_ps(taken, d));
  }
#else
  for (int l = 0; l < B; ++l) {
    const float m = std::max(std::max(a[l], a[l + B]), std::max(c[l], c[l + B]));
    const bool first = a[l] == m, second = !first && a[l + B] == m;
    const bool third = !first && !second && c[l] == m;
    da[l] = first ? grad[l] : 0.0f;
    da[l + B] = second ? grad[l] : 0.0f;
    dc[l] = third ? grad[l] : 0.0f;
    dc[l + B] = !first && !second && !third ? grad[l] : 0.0f;
  }
#endif
}

// The gradient of NativeMaxPool2x2Forward where the windows tile the input (each input gets its
// window's dy if it is the window's first largest value, else 0).
template <int B>
void NativeMaxPool2x2Backward(const Pool2dGeometry& g, size_t groups, const float* x,
                              const float* dy, float* dx) {
  const size_t row = static_cast<size_t>(g.width) * B;
  for (size_t n = 0; n < groups; ++n) {
    const float* in = x + n * g.height * row;
    float* din = dx + n * g.height * row;
    const float* grad = dy + n * g.out_height * g.out_width * B;
    for (int oh = 0; oh < g.out_height; ++oh) {
      const size_t top = 2 * oh * row;
      for (int ow = 0; ow < g.out_width; ++ow, grad += B) {
        const size_t at = top + 2 * ow * B;
        const float* a = in + at;
        const float* c = a + row;
        float* da = din + at;
        float* dc = da + row;
        MaxPool2x2WindowBackward<B>(a, c, grad, da, dc);
      }
    }
  }
}

template <int B>
void NativePoolForward(const Pool2dGeometry& g, bool max, const float* x, int batch, float* y) {
  const size_t groups = static_cast<size_t>(batch) * (g.channels / B);
  if (max && g.size == 2 && g.stride == 2) return NativeMaxPool2x2Forward<B>(g, groups, x, y);
  const float share = 1.0f / static_cast<float>(g.size * g.size);
  for (size_t n = 0; n < groups; ++n) {
    const float* in = x + n * g.height * g.width * B;
    float* out = y + n * g.out_height * g.out_width * B;
    for (int oh = 0; oh < g.out_height; ++oh) {
      for (int ow = 0; ow < g.out_width; ++ow, out += B) {
        const float* corner =
            in + (static_cast<size_t>(oh) * g.stride * g.width + ow * g.stride) * B;
        float acc[B];
        for (int b = 0; b < B; ++b) acc[b] = max ? corner[b] : 0.0f;
        for (int i = 0; i < g.size; ++i) {
          for (int j = 0; j < g.size; ++j) {
            const float* v = corner + (static_cast<size_t>(i) * g.width + j) * B;
            for (int b = 0; b < B; ++b) acc[b] = max ? std::max(acc[b], v[b]) : acc[b] + v[b];
          }
        }
        for (int b = 0; b < B; ++b) out[b] = max ? acc[b] : acc[b] * share;
      }
    }
  }
}

template <int B>
void NativePoolBackward(const Pool2dGeometry& g, bool max, const float* x, const float* dy,
                        int batch, float* dx) {
  const size_t groups = static_cast<size_t>(batch) * (g.channels / B);
  if (max && g.size == 2 && g.stride == 2 && g.out_height * 2 == g.height &&
      g.out_width * 2 == g.width) {
    return NativeMaxPool2x2Backward<B>(g, groups, x, dy, dx);
  }
  const size_t in_group = static_cast<size_t>(g.height) * g.width * B;
  std::fill(dx, dx + groups * in_group, 0.0f);
  const float share = 1.0f / static_cast<float>(g.size * g.size);
  for (size_t n = 0; n < groups; ++n) {
    const float* in = x + n * in_group;
    float* din = dx + n * in_group;
    const float* grad = dy + n * g.out_height * g.out_width * B;
    for (int oh = 0; oh < g.out_height; ++oh) {
      for (int ow = 0; ow < g.out_width; ++ow, grad += B) {
        const size_t corner = (static_cast<size_t>(oh) * g.stride * g.width + ow * g.stride) * B;
        float best[B];
        size_t at[B];
        for (int b = 0; b < B; ++b) {
          best[b] = in[corner + b];
          at[b] = corner + b;
        }
        for (int i = 0; i < g.size; ++i) {
          for (int j = 0; j < g.size; ++j) {
            const size_t k = corner + (static_cast<size_t>(i) * g.width + j) * B;
            for (int b = 0; b < B; ++b) {
              if (!max) din[k + b] += grad[b] * share;
              const bool larger = in[k + b] > best[b];
              best[b] = larger ? in[k + b] : best[b];
              at[b] = larger ? k + b : at[b];
            }
          }
        }
        if (max) {
          for (int b = 0; b < B; ++b) din[at[b]] += grad[b];
        }
      }
    }
  }
}

}  // namespace

void CpuBackend::Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch,
                               float* y) {
  if (g.native) {
    const bool max = kind == PoolKind::kMax;
    return NativeChannelBlock() == 16 ? NativePoolForward<16>(g, max, x, batch, y)
                                      : NativePoolForward<8>(g, max, x, batch, y);
  }
  const size_t planes = static_cast<size_t>(batch) * g.channels;
  const size_t in_plane = static_cast<size_t>(g.height) * g.width;
  const size_t out_plane = static_cast<size_t>(g.out_height) * g.out_width;
  if (IsMaxPool2x2(g, kind)) {
    for (size_t p = 0; p < planes; ++p) {
      MaxPool2x2PlaneForward(g, x + p * in_plane, y + p * out_plane);
    }
    return;
  }
  for (size_t i = 0; i < planes * out_plane; ++i) {
    y[i] = PoolForwardElement(g, kind == PoolKind::kMax, x, i);
  }
}

void CpuBackend::Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                                const float* dy, int batch, float* dx) {
  if (g.native) {
    const bool max = kind == PoolKind::kMax;
    return NativeChannelBlock() == 16 ? NativePoolBackward<16>(g, max, x, dy, batch, dx)
                                      : NativePoolBackward<8>(g, max, x, dy, batch, dx);
  }
  const size_t planes = static_cast<size_t>(batch) * g.channels;
  const size_t in_plane = static_cast<size_t>(g.height) * g.width;
  const size_t out_plane = static_cast<size_t>(g.out_height) * g.out_width;
  if (IsMaxPool2x2(g, kind) && g.out_height * 2 == g.height && g.out_width * 2 == g.width) {
    for (size_t p = 0; p < planes; ++p) {
      MaxPool2x2PlaneBackward(g, x + p * in_plane, dy + p * out_plane, dx + p * in_plane);
    }
    return;
  }
  for (size_t i = 0; i < planes * in_plane; ++i) {
    dx[i] = PoolBackwardElement(g, kind == PoolKind::kMax, x, dy, i);
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
