// Convolution and pooling as per-element functions, compiled for the host and (under nvcc) for
// the device: the CUDA backend's kernels are grid-stride loops over them, and a CPU test runs
// the same functions in loops against the CPU backend, so that their index math is checked
// where there is no GPU.
//
// The CUDA backend convolves a whole batch with one GEMM per product, over batch-wide
// matrices whose columns are (example, output pixel) pairs, column j = b * P + p with P the
// output pixels per example:
//   cols [patch x B*P]      each column an input window (Im2ColElement)
//   yt   [filters x B*P]    = w cols, then y (NCHW) = yt's columns regrouped + bias
//   dyt  [filters x B*P]    dy regrouped (FilterMajorElement)
//   dw = dyt cols^T;  db = dyt 1;  dcols = w^T dyt, summed back per input pixel (Col2ImElement)
#ifndef MONSOON_CORE_COMPUTE_CONV_MATH_H_
#define MONSOON_CORE_COMPUTE_CONV_MATH_H_

#include <cstddef>

#include "core/compute/compute_backend.h"
#include "core/compute/kernel_math.h"

namespace monsoon {

// cols element i of a batch of `batch` examples x [batch x C x H x W]; padding reads 0.
MONSOON_HOST_DEVICE inline float Im2ColElement(const Conv2dGeometry& g, int batch, const float* x,
                                               size_t i) {
  const size_t pixels = static_cast<size_t>(g.out_height) * g.out_width;
  const size_t columns = batch * pixels;
  const int row = static_cast<int>(i / columns);  // (c, kh, kw)
  const size_t column = i % columns;
  const size_t b = column / pixels, p = column % pixels;
  const int c = row / (g.kernel * g.kernel), kh = row / g.kernel % g.kernel, kw = row % g.kernel;
  const int ih = static_cast<int>(p / g.out_width) * g.stride - g.pad_top + kh;
  const int iw = static_cast<int>(p % g.out_width) * g.stride - g.pad_left + kw;
  if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) return 0.0f;
  return x[((b * g.channels + c) * g.height + ih) * g.width + iw];
}

// y element i (NCHW [batch x filters x out pixels]) from yt [filters x batch*P], plus the bias.
MONSOON_HOST_DEVICE inline float ConvOutputElement(const Conv2dGeometry& g, int batch,
                                                   const float* yt, const float* bias, size_t i) {
  const size_t pixels = static_cast<size_t>(g.out_height) * g.out_width;
  const size_t b = i / (g.filters * pixels), f = i / pixels % g.filters, p = i % pixels;
  return yt[f * batch * pixels + b * pixels + p] + bias[f];
}

// dyt element i ([filters x batch*P]) from dy (NCHW [batch x filters x out pixels]).
MONSOON_HOST_DEVICE inline float FilterMajorElement(const Conv2dGeometry& g, int batch,
                                                    const float* dy, size_t i) {
  const size_t pixels = static_cast<size_t>(g.out_height) * g.out_width;
  const size_t columns = batch * pixels;
  const size_t f = i / columns, b = i % columns / pixels, p = i % pixels;
  return dy[(b * g.filters + f) * pixels + p];
}

// The first and one-past-last output positions along one axis whose window, `window` wide and
// moved by `stride` from -pad, covers input position `at`.
MONSOON_HOST_DEVICE inline void CoveringWindows(int at, int pad, int window, int stride, int outs,
                                                int* first, int* end) {
  const int shifted = at + pad;  // the input position in padded coordinates
  *first = shifted < window ? 0 : (shifted - window) / stride + 1;
  *end = shifted / stride + 1;
  if (*end > outs) *end = outs;
}

// dx element i (NCHW [batch x C x H x W]): the sum of the dcols entries that read it.
MONSOON_HOST_DEVICE inline float Col2ImElement(const Conv2dGeometry& g, int batch,
                                               const float* dcols, size_t i) {
  const size_t pixels = static_cast<size_t>(g.out_height) * g.out_width;
  const size_t columns = batch * pixels;
  const int iw = static_cast<int>(i % g.width), ih = static_cast<int>(i / g.width % g.height);
  const int c = static_cast<int>(i / (static_cast<size_t>(g.width) * g.height) % g.channels);
  const size_t b = i / (static_cast<size_t>(g.width) * g.height * g.channels);
  int oh_first, oh_end, ow_first, ow_end;
  CoveringWindows(ih, g.pad_top, g.kernel, g.stride, g.out_height, &oh_first, &oh_end);
  CoveringWindows(iw, g.pad_left, g.kernel, g.stride, g.out_width, &ow_first, &ow_end);
  float sum = 0.0f;
  for (int oh = oh_first; oh < oh_end; ++oh) {
    const int kh = ih + g.pad_top - oh * g.stride;
    for (int ow = ow_first; ow < ow_end; ++ow) {
      const int kw = iw + g.pad_left - ow * g.stride;
      const size_t row = (static_cast<size_t>(c) * g.kernel + kh) * g.kernel + kw;
      sum += dcols[row * columns + b * pixels + static_cast<size_t>(oh) * g.out_width + ow];
    }
  }
  return sum;
}

// The input offset (within its plane) of the first largest value of output window (oh, ow).
MONSOON_HOST_DEVICE inline int MaxPoolArgmax(const Pool2dGeometry& g, const float* plane, int oh,
                                             int ow) {
  const int corner = oh * g.stride * g.width + ow * g.stride;
  int best = corner;
  for (int i = 0; i < g.size; ++i) {
    for (int j = 0; j < g.size; ++j) {
      const int at = corner + i * g.width + j;
      if (plane[at] > plane[best]) best = at;
    }
  }
  return best;
}

// y element i (NCHW [batch x C x out_height x out_width]) of max or average pooling.
MONSOON_HOST_DEVICE inline float PoolForwardElement(const Pool2dGeometry& g, bool max,
                                                    const float* x, size_t i) {
  const size_t out_plane = static_cast<size_t>(g.out_height) * g.out_width;
  const float* plane = x + i / out_plane * g.height * g.width;
  const int oh = static_cast<int>(i % out_plane / g.out_width);
  const int ow = static_cast<int>(i % g.out_width);
  if (max) return plane[MaxPoolArgmax(g, plane, oh, ow)];
  float sum = 0.0f;
  for (int a = 0; a < g.size; ++a) {
    for (int b = 0; b < g.size; ++b)
      sum += plane[(oh * g.stride + a) * g.width + ow * g.stride + b];
  }
  return sum * (1.0f / static_cast<float>(g.size * g.size));
}

// dx element i (NCHW [batch x C x H x W]) of pooling: the shares of dy of the windows covering
// it (all of a window's to its first largest input under max pooling, an equal share each
// under average pooling).
MONSOON_HOST_DEVICE inline float PoolBackwardElement(const Pool2dGeometry& g, bool max,
                                                     const float* x, const float* dy, size_t i) {
  const size_t in_plane = static_cast<size_t>(g.height) * g.width;
  const size_t plane_index = i / in_plane;
  const float* plane = x + plane_index * in_plane;
  const float* grad = dy + plane_index * g.out_height * g.out_width;
  const int at = static_cast<int>(i % in_plane), ih = at / g.width, iw = at % g.width;
  int oh_first, oh_end, ow_first, ow_end;
  CoveringWindows(ih, 0, g.size, g.stride, g.out_height, &oh_first, &oh_end);
  CoveringWindows(iw, 0, g.size, g.stride, g.out_width, &ow_first, &ow_end);
  const float share = 1.0f / static_cast<float>(g.size * g.size);
  float sum = 0.0f;
  for (int oh = oh_first; oh < oh_end; ++oh) {
    for (int ow = ow_first; ow < ow_end; ++ow) {
      const float d = grad[oh * g.out_width + ow];
      if (!max) {
        sum += d * share;
      } else if (MaxPoolArgmax(g, plane, oh, ow) == at) {
        sum += d;
      }
    }
  }
  return sum;
}

// Dropout's factor for element i of a step's activations: 0 with probability `rate`, else
// 1 / (1 - rate), drawn from (seed, i) alone.
MONSOON_HOST_DEVICE inline float DropoutScale(float rate, uint64_t seed, size_t i) {
  return UniformHash(seed, i) >= rate ? 1.0f / (1.0f - rate) : 0.0f;
}

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CONV_MATH_H_
