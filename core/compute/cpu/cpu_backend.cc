#include "core/compute/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/compute/conv_math.h"
#include "core/compute/kernel_math.h"
#include "core/finite.h"
#include "core/multiversion.h"

namespace monsoon {

CpuBackend::CpuBackend(int blas_threads, bool native_layouts)
    : convolution_(blas_threads), batch_norm_(blas_threads), native_layouts_(native_layouts) {
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

void CpuBackend::CopyOnDevice(const float* from, float* to, size_t n) {
  if (from != to) std::memcpy(to, from, n * sizeof(float));
}

size_t CpuBackend::CopyToHostFindingNonFinite(const float* device, float* host, size_t n) {
  return CopyFindingNonFinite(device, host, n);
}

void CpuBackend::Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      const float* b, float beta, float* c) {
  const int lda = trans_a ? m : k;
  const int ldb = trans_b ? k : n;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

void CpuBackend::GatherRows(const float* table, int cols, const float* index, int rows,
                            float* out) {
  for (int r = 0; r < rows; ++r) {
    std::memcpy(out + static_cast<size_t>(r) * cols, table + static_cast<size_t>(index[r]) * cols,
                cols * sizeof(float));
  }
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

void CpuBackend::ActivationForward(ActivationFn f, const float* x, float* y, size_t n) {
  DispatchActivation(f.kind, [&](auto kind) {
    constexpr Activation F = decltype(kind)::value;
    for (size_t i = 0; i < n; ++i) y[i] = ActivationElement<F>(f.slope, x[i]);
  });
}

void CpuBackend::ActivationBackward(ActivationFn f, const float* x, const float* y,
                                    const float* dy, float* dx, size_t n) {
  DispatchActivation(f.kind, [&](auto kind) {
    constexpr Activation F = decltype(kind)::value;
    for (size_t i = 0; i < n; ++i) {
      const float in = GradientUsesInput(F) ? x[i] : 0.0f;
      dx[i] = ActivationGradient<F>(f.slope, in, y[i], dy[i]);
    }
  });
}

void CpuBackend::SoftmaxCrossEntropy(const float* logits, const float* labels, int rows,
                                     int classes, float* dlogits, float* loss) {
  double loss_sum = 0;
  int correct_count = 0;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int r = 0; r < rows; ++r) {
    bool correct = false;
    loss_sum += SoftmaxCrossEntropyRow(logits + static_cast<size_t>(r) * classes,
                                       static_cast<int>(labels[r]), classes, inv_rows,
                                       dlogits + static_cast<size_t>(r) * classes, &correct);
    correct_count += correct ? 1 : 0;
  }
  WriteLoss(loss_sum, correct_count, loss);
}

void CpuBackend::MeanSquaredError(const float* pred, const float* target, int rows, int cols,
                                  float* dpred, float* loss) {
  double loss_sum = 0;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  const size_t n = static_cast<size_t>(rows) * cols;
  for (size_t i = 0; i < n; ++i) {
    const float diff = pred[i] - target[i];
    loss_sum += 0.5 * static_cast<double>(diff) * diff;
    dpred[i] = diff * inv_rows;
  }
  WriteLoss(loss_sum, 0, loss);
}

void CpuBackend::Axpy(float alpha, const float* x, float* y, size_t n) {
  cblas_saxpy(static_cast<int>(n), alpha, x, 1, y, 1);
}

void CpuBackend::Add(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
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

// out[c][r] = in[r][c] for a rows x cols matrix `in` (row stride cols) into `out` (row stride
// rows): SSE2 4x4 blocks, the edges one by one.
void Transpose(const float* in, size_t rows, size_t cols, float* out) {
  size_t r = 0;
#if defined(__SSE2__)
  for (; r + 4 <= rows; r += 4) {
    size_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 a = _mm_loadu_ps(in + r * cols + c), b = _mm_loadu_ps(in + (r + 1) * cols + c);
      __m128 e = _mm_loadu_ps(in + (r + 2) * cols + c), d = _mm_loadu_ps(in + (r + 3) * cols + c);
      _MM_TRANSPOSE4_PS(a, b, e, d);
      _mm_storeu_ps(out + c * rows + r, a);
      _mm_storeu_ps(out + (c + 1) * rows + r, b);
      _mm_storeu_ps(out + (c + 2) * rows + r, e);
      _mm_storeu_ps(out + (c + 3) * rows + r, d);
    }
    for (; c < cols; ++c) {
      for (size_t i = r; i < r + 4; ++i) out[c * rows + i] = in[i * cols + c];
    }
  }
#endif
  for (; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
  }
}

}  // namespace

void CpuBackend::ConvertLayout(int channels, int height, int width, int batch, bool to_native,
                               const float* x, float* y) {
  // Each group of `block` channels: [block x pixels] to [pixels x block] (to_native) or back.
  const size_t block = NativeChannelBlock();
  const size_t groups = static_cast<size_t>(batch) * channels / block;
  const size_t pixels = static_cast<size_t>(height) * width;
  for (size_t n = 0; n < groups; ++n, x += block * pixels, y += block * pixels) {
    if (to_native) {
      Transpose(x, block, pixels, y);
    } else {
      Transpose(x, pixels, block, y);
    }
  }
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
// compiler vectorises; other windows run core/compute/conv_math.h's per-element functions, as the
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

// Whether g is 2x2 max pooling with stride 2 whose windows tile the input.
bool TilesMaxPool2x2(const Pool2dGeometry& g, PoolKind kind) {
  return IsMaxPool2x2(g, kind) && g.out_height * 2 == g.height && g.out_width * 2 == g.width;
}

// Pooling in the native layout [batch x C/B x H x W x B]: each window's B channels at once,
// with the results of PoolForwardElement and PoolBackwardElement (the same sums in the same
// order; a max window's gradient to its first largest input, row by row).
//
// 2x2 max windows with stride 2 that tile the input (the common case) record each lane's
// winner in the forward pass, one byte per output: 0 to 3 for the first largest of the top
// row's two inputs then the bottom row's, 4 to 7 for none (a ReLU's input whose window's
// maximum is 0, with relu_input). The backward pass reads those bytes instead of x, and
// streams dx past the caches. SSE2 four lanes at a time, in bit masks: no branches (ties and
// maxima fall in no pattern) and no arithmetic on dy (tiny gradients are denormal, and
// arithmetic on them is slow).

// One 2x2 window's B lanes: top row a[0, 2B), bottom row c[0, 2B); out[0, B) its maxima,
// winner[0, B) their positions.
template <int B>
void MaxPool2x2WindowForward(bool relu_input, const float* a, const float* c, float* out,
                             uint8_t* winner) {
#if defined(__SSE2__)
  __m128i at[B / 4];
  for (int q = 0; q < B / 4; ++q) {
    const int l = 4 * q;
    const __m128 a0 = _mm_loadu_ps(a + l), a1 = _mm_loadu_ps(a + l + B);
    const __m128 c0 = _mm_loadu_ps(c + l), c1 = _mm_loadu_ps(c + l + B);
    const __m128 m = _mm_max_ps(_mm_max_ps(a0, a1), _mm_max_ps(c0, c1));
    _mm_storeu_ps(out + l, m);
    // All ones where a0, then a0 and a1, then a0, a1 and c0 all miss the maximum: as integers,
    // -1 for each input before the winner.
    const __m128 miss0 = _mm_cmpneq_ps(a0, m);
    const __m128 miss1 = _mm_andnot_ps(_mm_cmpeq_ps(a1, m), miss0);
    const __m128 miss2 = _mm_andnot_ps(_mm_cmpeq_ps(c0, m), miss1);
    const __m128i misses = _mm_add_epi32(
        _mm_add_epi32(_mm_castps_si128(miss0), _mm_castps_si128(miss1)), _mm_castps_si128(miss2));
    at[q] = _mm_sub_epi32(_mm_setzero_si128(), misses);
    if (relu_input) {
      const __m128i none = _mm_castps_si128(_mm_cmple_ps(m, _mm_setzero_ps()));
      at[q] = _mm_or_si128(at[q], _mm_and_si128(none, _mm_set1_epi32(4)));
    }
  }
  if constexpr (B == 16) {
    const __m128i low = _mm_packs_epi32(at[0], at[1]), high = _mm_packs_epi32(at[2], at[3]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(winner), _mm_packus_epi16(low, high));
  } else {
    const __m128i words = _mm_packs_epi32(at[0], at[1]);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(winner), _mm_packus_epi16(words, words));
  }
#else
  for (int l = 0; l < B; ++l) {
    const float m = std::max(std::max(a[l], a[l + B]), std::max(c[l], c[l + B]));
    out[l] = m;
    winner[l] = relu_input && m <= 0.0f ? 4 : a[l] == m ? 0 : a[l + B] == m ? 1 : c[l] == m ? 2 : 3;
  }
#endif
}

// The gradient of one window of MaxPool2x2WindowForward: dy's lanes grad[0, B) to the winners.
template <int B>
void MaxPool2x2WindowBackward(const uint8_t* winner, const float* grad, float* da, float* dc) {
#if defined(__SSE2__)
  for (int l = 0; l < B; l += 4) {
    int32_t bytes;
    std::memcpy(&bytes, winner + l, sizeof(bytes));
    const __m128i zero = _mm_setzero_si128();
    const __m128i at = _mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(bytes), zero), zero);
    const __m128 d = _mm_loadu_ps(grad + l);
    const auto to = [&](int position) {
      return _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(at, _mm_set1_epi32(position))), d);
    };
    _mm_stream_ps(da + l, to(0));
    _mm_stream_ps(da + l + B, to(1));
    _mm_stream_ps(dc + l, to(2));
    _mm_stream_ps(dc + l + B, to(3));
  }
#else
  for (int l = 0; l < B; ++l) {
    da[l] = winner[l] == 0 ? grad[l] : 0.0f;
    da[l + B] = winner[l] == 1 ? grad[l] : 0.0f;
    dc[l] = winner[l] == 2 ? grad[l] : 0.0f;
    dc[l + B] = winner[l] == 3 ? grad[l] : 0.0f;
  }
#endif
}

// Calls window(a, c, o) for each 2x2 window of a tiling 2x2 max pooling over `groups` channel
// groups of x: its top row a, bottom row c (B lanes each), and its index o among the outputs.
template <int B, typename T, typename Window>
void ForEachMaxPool2x2Window(const Pool2dGeometry& g, size_t groups, T* x, Window&& window) {
  const size_t row = static_cast<size_t>(g.width) * B;
  size_t o = 0;
  for (size_t n = 0; n < groups; ++n) {
    T* in = x + n * g.height * row;
    for (int oh = 0; oh < g.out_height; ++oh) {
      T* top = in + 2 * oh * row;
      for (int ow = 0; ow < g.out_width; ++ow, o += B) window(top + 2 * ow * B, row, o);
    }
  }
}

template <int B>
void NativeMaxPool2x2Forward(const Pool2dGeometry& g, size_t groups, const float* x, float* y,
                             uint8_t* winners) {
  ForEachMaxPool2x2Window<B>(g, groups, x, [&](const float* a, size_t row, size_t o) {
    MaxPool2x2WindowForward<B>(g.relu == FusedRelu::kOnInput, a, a + row, y + o, winners + o);
  });
}

// dx must be 16-byte aligned (it is streamed).
template <int B>
void NativeMaxPool2x2Backward(const Pool2dGeometry& g, size_t groups, const uint8_t* winners,
                              const float* dy, float* dx) {
  ForEachMaxPool2x2Window<B>(g, groups, dx, [&](float* da, size_t row, size_t o) {
    MaxPool2x2WindowBackward<B>(winners + o, dy + o, da, da + row);
  });
#if defined(__SSE2__)
  _mm_sfence();  // the streamed stores are seen before later loads
#endif
}

template <int B>
void NativePoolForward(const Pool2dGeometry& g, bool max, const float* x, int batch, float* y,
                       uint8_t* winners) {
  const size_t groups = static_cast<size_t>(batch) * (g.channels / B);
  if (winners != nullptr) return NativeMaxPool2x2Forward<B>(g, groups, x, y, winners);
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
void NativePoolBackward(const Pool2dGeometry& g, bool max, const float* x, const uint8_t* winners,
                        const float* dy, int batch, float* dx) {
  const size_t groups = static_cast<size_t>(batch) * (g.channels / B);
  if (winners != nullptr) return NativeMaxPool2x2Backward<B>(g, groups, winners, dy, dx);
  const bool relu_input = g.relu == FusedRelu::kOnInput;
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
              if (!max && (!relu_input || in[k + b] > 0.0f)) din[k + b] += grad[b] * share;
              const bool larger = in[k + b] > best[b];
              best[b] = larger ? in[k + b] : best[b];
              at[b] = larger ? k + b : at[b];
            }
          }
        }
        if (max) {
          for (int b = 0; b < B; ++b) {
            if (!relu_input || best[b] > 0.0f) din[at[b]] += grad[b];
          }
        }
      }
    }
  }
}

}  // namespace

size_t CpuBackend::PoolWorkspaceBytes(const Pool2dGeometry& g, PoolKind kind, int batch) const {
  if (g.layout != Layout::kNative || !TilesMaxPool2x2(g, kind)) return 0;
  return static_cast<size_t>(batch) * g.channels * g.out_height * g.out_width;
}

void CpuBackend::Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch,
                               float* y, uint8_t* workspace) {
  if (g.layout == Layout::kNative) {
    const bool max = kind == PoolKind::kMax;
    uint8_t* winners = PoolWorkspaceBytes(g, kind, batch) > 0 ? workspace : nullptr;
    return NativeChannelBlock() == 16 ? NativePoolForward<16>(g, max, x, batch, y, winners)
                                      : NativePoolForward<8>(g, max, x, batch, y, winners);
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
                                const float* /*y*/, const uint8_t* workspace, const float* dy,
                                int batch, float* dx) {
  if (g.layout == Layout::kNative) {
    const bool max = kind == PoolKind::kMax;
    const uint8_t* winners = PoolWorkspaceBytes(g, kind, batch) > 0 ? workspace : nullptr;
    return NativeChannelBlock() == 16 ? NativePoolBackward<16>(g, max, x, winners, dy, batch, dx)
                                      : NativePoolBackward<8>(g, max, x, winners, dy, batch, dx);
  }
  const size_t planes = static_cast<size_t>(batch) * g.channels;
  const size_t in_plane = static_cast<size_t>(g.height) * g.width;
  const size_t out_plane = static_cast<size_t>(g.out_height) * g.out_width;
  if (TilesMaxPool2x2(g, kind)) {
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

namespace {

// Batch normalisation's passes over one row: a channel's `n` pixels of one example. Sums run
// in kLanes float lanes (so that they vectorise), added up in double per channel by the caller.
constexpr int kLanes = 16;

template <class Term>
float LaneSum(size_t n, Term term) {
  float lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
  }
  for (; i < n; ++i) lanes[0] += term(i);
  float sum = 0;
  for (const float lane : lanes) sum += lane;
  return sum;
}

MONSOON_MULTIVERSION float RowSum(const float* x, size_t n) {
  return LaneSum(n, [x](size_t i) { return x[i]; });
}

MONSOON_MULTIVERSION float RowSquares(const float* x, size_t n, float mean) {
  return LaneSum(n, [x, mean](size_t i) { return (x[i] - mean) * (x[i] - mean); });
}

// Sums of dy and of dy * xhat over a row, in one pass.
MONSOON_MULTIVERSION void RowGradientSums(const float* x, const float* dy, size_t n, float mean,
                                          float invstd, float* sum_dy, float* sum_dy_xhat) {
  float dys[kLanes] = {}, products[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      dys[l] += dy[i + l];
      products[l] += dy[i + l] * ((x[i + l] - mean) * invstd);
    }
  }
  for (; i < n; ++i) {
    dys[0] += dy[i];
    products[0] += dy[i] * ((x[i] - mean) * invstd);
  }
  *sum_dy = *sum_dy_xhat = 0;
  for (int l = 0; l < kLanes; ++l) {
    *sum_dy += dys[l];
    *sum_dy_xhat += products[l];
  }
}

MONSOON_MULTIVERSION void RowNormalise(const float* x, size_t n, float mean, float invstd,
                                       float gamma, float beta, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = BatchNormElement(x[i], mean, invstd, gamma, beta);
}

MONSOON_MULTIVERSION void RowInputGradient(bool training, const float* x, const float* dy,
                                           size_t n, float mean, float invstd, float gamma,
                                           float mean_dy, float mean_dy_xhat, float* dx) {
  // The two modes as loops of their own, so that each vectorises.
  if (training) {
    for (size_t i = 0; i < n; ++i) {
      dx[i] = BatchNormGradientElement(true, gamma, invstd, (x[i] - mean) * invstd, dy[i],
                                       mean_dy, mean_dy_xhat);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      dx[i] = BatchNormGradientElement(false, gamma, invstd, 0.0f, dy[i], 0.0f, 0.0f);
    }
  }
}

// The sum over channel c's rows of row(offset of the row), in double.
template <class Row>
double ChannelSum(const BatchNormGeometry& g, int batch, int c, Row row) {
  double sum = 0;
  for (int b = 0; b < batch; ++b) sum += row((static_cast<size_t>(b) * g.channels + c) * g.pixels);
  return sum;
}

}  // namespace

void CpuBackend::BatchNormForward(const BatchNormGeometry& g, bool training, const float* x,
                                  const float* gamma, const float* beta, float* running_mean,
                                  float* running_var, int batch, float* y, float* mean,
                                  float* invstd) {
  if (g.layout == Layout::kNative) {
    batch_norm_.Forward(g, training, x, gamma, beta, running_mean, running_var, batch, y, mean,
                        invstd);
    return;
  }
  const double count = static_cast<double>(batch) * g.pixels;
  for (int c = 0; c < g.channels; ++c) {
    float m = running_mean[c], variance = running_var[c];
    if (training) {
      m = static_cast<float>(
          ChannelSum(g, batch, c, [&](size_t at) { return RowSum(x + at, g.pixels); }) / count);
      variance = static_cast<float>(
          ChannelSum(g, batch, c, [&](size_t at) { return RowSquares(x + at, g.pixels, m); }) /
          count);
      BatchNormRunningUpdate(g.momentum, m, variance, count, &running_mean[c], &running_var[c]);
    }
    mean[c] = m;
    invstd[c] = 1.0f / std::sqrt(variance + g.epsilon);
    for (int b = 0; b < batch; ++b) {
      const size_t at = (static_cast<size_t>(b) * g.channels + c) * g.pixels;
      RowNormalise(x + at, g.pixels, m, invstd[c], gamma[c], beta[c], y + at);
    }
  }
}

void CpuBackend::BatchNormBackward(const BatchNormGeometry& g, bool training, const float* x,
                                   const float* gamma, const float* mean, const float* invstd,
                                   const float* dy, int batch, float* dgamma, float* dbeta,
                                   float* dx) {
  if (g.layout == Layout::kNative) {
    batch_norm_.Backward(g, training, x, gamma, mean, invstd, dy, batch, dgamma, dbeta, dx);
    return;
  }
  const double count = static_cast<double>(batch) * g.pixels;
  for (int c = 0; c < g.channels; ++c) {
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int b = 0; b < batch; ++b) {
      const size_t at = (static_cast<size_t>(b) * g.channels + c) * g.pixels;
      float row_dy, row_dy_xhat;
      RowGradientSums(x + at, dy + at, g.pixels, mean[c], invstd[c], &row_dy, &row_dy_xhat);
      sum_dy += row_dy;
      sum_dy_xhat += row_dy_xhat;
    }
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    if (dx == nullptr) continue;
    for (int b = 0; b < batch; ++b) {
      const size_t at = (static_cast<size_t>(b) * g.channels + c) * g.pixels;
      RowInputGradient(training, x + at, dy + at, g.pixels, mean[c], invstd[c], gamma[c],
                       static_cast<float>(sum_dy / count), static_cast<float>(sum_dy_xhat / count),
                       dx + at);
    }
  }
}

}  // namespace monsoon
