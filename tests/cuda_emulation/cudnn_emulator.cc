// cuDNN's legacy convolution, pooling and batch-norm calls (stub/cudnn.h) on the emulated
// device, from cuDNN's documented definitions, for the CUDA emulation test: NCHW float tensors,
// cross-correlation with symmetric zero padding, y = alpha * result + beta * y (beta 0
// ignores y's old contents). Each call checks its descriptors against each other as cuDNN
// does (BAD_PARAM) and every operand's extent, the workspace's included, against the live
// device allocations; results accumulate in double and are queued on the handle's stream.
//
// Algorithms: each direction offers two, ranked: algorithm 1, which needs a workspace of an
// im2col matrix's size (and clobbers it), then algorithm 0, which needs none. Both compute
// the same values. CUDNN_DEFAULT_MATH rounds the convolutions' operands to tf32, as tensor
// cores do; CUDNN_FMA_MATH computes in fp32. Max pooling's backward sends each window's
// gradient to the window's first input equal to the y it is given (the forward's output).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "cudnn.h"
#include "tests/cuda_emulation/emulator.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  int n = 0, c = 0, h = 0, w = 0;
  size_t size() const { return static_cast<size_t>(n) * c * h * w; }
  size_t at(int in, int ic, int ih, int iw) const {
    return ((static_cast<size_t>(in) * c + ic) * h + ih) * w + iw;
  }
};
struct cudnnFilterStruct {
  int k = 0, c = 0, h = 0, w = 0;
  size_t size() const { return static_cast<size_t>(k) * c * h * w; }
};
struct cudnnConvolutionStruct {
  int pad_h = 0, pad_w = 0, u = 1, v = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
struct cudnnPoolingStruct {
  bool max = true;
  int window = 0, stride = 1;
};

namespace {

constexpr int kVersion = 91900;

bool Positive(std::initializer_list<int> dims) {
  for (int d : dims) {
    if (d <= 0) return false;
  }
  return true;
}

// Whether x, w and y describe one convolution, as cuDNN checks: channels agree, the padded
// input holds a whole filter, y has the output's shape.
bool Consistent(const cudnnTensorStruct& x, const cudnnFilterStruct& w,
                const cudnnConvolutionStruct& conv, const cudnnTensorStruct& y) {
  return x.c == w.c && y.n == x.n && y.c == w.k && x.h + 2 * conv.pad_h >= w.h &&
         x.w + 2 * conv.pad_w >= w.w && y.h == (x.h + 2 * conv.pad_h - w.h) / conv.u + 1 &&
         y.w == (x.w + 2 * conv.pad_w - w.w) / conv.v + 1 && y.h > 0 && y.w > 0;
}

// Algorithm 1's workspace: the im2col matrix of the whole batch.
size_t Im2colBytes(const cudnnTensorStruct& x, const cudnnFilterStruct& w,
                   const cudnnTensorStruct& y) {
  return static_cast<size_t>(x.n) * w.c * w.h * w.w * y.h * y.w * sizeof(float);
}

float Operand(float v, cudnnMathType_t math) {
  if (math != CUDNN_DEFAULT_MATH || !std::isfinite(v)) return v;
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits += (1u << 12) - 1 + ((bits >> 13) & 1);
  bits &= ~((1u << 13) - 1);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Every (example, filter, output pixel, channel, kernel row, kernel column) of a convolution
// with its input in range: visit(x index, w index, y index).
void ForEachTap(const cudnnTensorStruct& x, const cudnnFilterStruct& w,
                const cudnnConvolutionStruct& conv, const cudnnTensorStruct& y,
                const std::function<void(size_t, size_t, size_t)>& visit) {
  for (int n = 0; n < y.n; ++n) {
    for (int k = 0; k < y.c; ++k) {
      for (int oh = 0; oh < y.h; ++oh) {
        for (int ow = 0; ow < y.w; ++ow) {
          for (int c = 0; c < w.c; ++c) {
            for (int r = 0; r < w.h; ++r) {
              const int ih = oh * conv.u - conv.pad_h + r;
              if (ih < 0 || ih >= x.h) continue;
              for (int s = 0; s < w.w; ++s) {
                const int iw = ow * conv.v - conv.pad_w + s;
                if (iw < 0 || iw >= x.w) continue;
                visit(x.at(n, c, ih, iw), ((static_cast<size_t>(k) * w.c + c) * w.h + r) * w.w + s,
                      y.at(n, k, oh, ow));
              }
            }
          }
        }
      }
    }
  }
}

// out[i] = alpha * sum[i] + beta * out[i] (beta 0: out's old value unread).
void Blend(const std::vector<double>& sum, float alpha, float beta, float* out) {
  for (size_t i = 0; i < sum.size(); ++i) {
    out[i] = static_cast<float>(alpha * sum[i] + (beta == 0.0f ? 0.0 : double{beta} * out[i]));
  }
}

// The workspace an algorithm needs: algorithm 1 an im2col matrix, 0 none. Checks the
// workspace given; BAD_PARAM when it is too small.
bool WorkspaceFits(int algo, size_t needed, void* workspace, size_t bytes) {
  const size_t need = algo == 1 ? needed : 0;
  if (bytes < need) return false;
  cuda_emulation::CheckDevice(workspace, need, "cuDNN workspace");
  return true;
}

// Algorithm 1 computes through its workspace (`bytes` of it): whatever was there is gone.
std::function<void()> Clobbering(int algo, void* workspace, size_t bytes,
                                 std::function<void()> run) {
  return [=] {
    if (algo == 1) std::memset(workspace, 0xff, bytes);
    run();
  };
}

// A batch normalisation's operands: x-shaped tensors and a [1, C, 1, 1] one.
bool NormShapes(cudnnBatchNormMode_t mode, const cudnnTensorStruct& x,
                std::initializer_list<const cudnnTensorStruct*> like_x,
                const cudnnTensorStruct& per_channel) {
  for (const cudnnTensorStruct* t : like_x) {
    if (t->n != x.n || t->c != x.c || t->h != x.h || t->w != x.w) return false;
  }
  return mode == CUDNN_BATCHNORM_SPATIAL && per_channel.n == 1 && per_channel.c == x.c &&
         per_channel.h == 1 && per_channel.w == 1;
}

bool Same(const cudnnTensorStruct& a, const cudnnTensorStruct& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

// Whether y is x pooled by `pool`: the same examples and channels, unpadded windows' count.
bool Pools(const cudnnPoolingStruct& pool, const cudnnTensorStruct& x, const cudnnTensorStruct& y) {
  return y.n == x.n && y.c == x.c && x.h >= pool.window && x.w >= pool.window &&
         y.h == (x.h - pool.window) / pool.stride + 1 &&
         y.w == (x.w - pool.window) / pool.stride + 1;
}

// Every output of a pooling with its window's inputs, row by row: visit(y index, x indices).
void ForEachWindow(const cudnnPoolingStruct& pool, const cudnnTensorStruct& x,
                   const cudnnTensorStruct& y,
                   const std::function<void(size_t, const std::vector<size_t>&)>& visit) {
  std::vector<size_t> window;
  for (int n = 0; n < y.n; ++n) {
    for (int c = 0; c < y.c; ++c) {
      for (int oh = 0; oh < y.h; ++oh) {
        for (int ow = 0; ow < y.w; ++ow) {
          window.clear();
          for (int r = 0; r < pool.window; ++r) {
            for (int s = 0; s < pool.window; ++s) {
              window.push_back(x.at(n, c, oh * pool.stride + r, ow * pool.stride + s));
            }
          }
          visit(y.at(n, c, oh, ow), window);
        }
      }
    }
  }
}

template <class Perf>
void Rank(size_t im2col_bytes, int requested, int* returned, Perf* results) {
  *returned = 0;
  for (int algo : {1, 0}) {
    if (*returned == requested) break;
    Perf& p = results[(*returned)++];
    p = Perf{};
    p.algo = static_cast<decltype(p.algo)>(algo);
    p.status = CUDNN_STATUS_SUCCESS;
    p.memory = algo == 1 ? im2col_bytes : 0;
  }
}

}  // namespace

extern "C" {

size_t cudnnGetVersion(void) { return kVersion; }

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
      return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED";
    default:
      return "CUDNN_STATUS_BAD_PARAM";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  cuda_emulation::SynchronizeDevice();  // cudnnDestroy synchronises the device
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  if (desc == nullptr || !Positive({n, c, h, w})) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  *desc = {n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  if (desc == nullptr || !Positive({k, c, h, w})) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  *desc = {k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute_type) {
  if (desc == nullptr || pad_h < 0 || pad_w < 0 || !Positive({u, v, dilation_h, dilation_w})) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (dilation_h != 1 || dilation_w != 1 || mode != CUDNN_CROSS_CORRELATION ||
      compute_type != CUDNN_DATA_FLOAT) {
    return CUDNN_STATUS_NOT_SUPPORTED;  // not emulated
  }
  desc->pad_h = pad_h;
  desc->pad_w = pad_w;
  desc->u = u;
  desc->v = v;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  if (desc == nullptr || (math != CUDNN_DEFAULT_MATH && math != CUDNN_FMA_MATH)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, const int requested,
    int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
  if (handle == nullptr || requested < 1 || !Consistent(*x, *w, *conv, *y)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  Rank(Im2colBytes(*x, *w, *y), requested, returned, results);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
  if (handle == nullptr || requested < 1 || !Consistent(*dx, *w, *conv, *dy)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  Rank(Im2colBytes(*dx, *w, *dy), requested, returned, results);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  if (handle == nullptr || requested < 1 || !Consistent(*x, *dw, *conv, *dy)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  Rank(Im2colBytes(*x, *dw, *dy), requested, returned, results);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t x_desc, const void* x,
                                      const cudnnFilterDescriptor_t w_desc, const void* w,
                                      const cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* workspace,
                                      size_t workspace_bytes, const void* beta,
                                      const cudnnTensorDescriptor_t y_desc, void* y) {
  if (handle == nullptr || !Consistent(*x_desc, *w_desc, *conv, *y_desc) ||
      !WorkspaceFits(algo, Im2colBytes(*x_desc, *w_desc, *y_desc), workspace, workspace_bytes)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(x, x_desc->size(), "cudnnConvolutionForward x");
  cuda_emulation::CheckDeviceFloats(w, w_desc->size(), "cudnnConvolutionForward w");
  cuda_emulation::CheckDeviceFloats(y, y_desc->size(), "cudnnConvolutionForward y");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const cudnnTensorStruct xd = *x_desc, yd = *y_desc;
  const cudnnFilterStruct wd = *w_desc;
  const cudnnConvolutionStruct cd = *conv;
  const auto* xp = static_cast<const float*>(x);
  const auto* wp = static_cast<const float*>(w);
  auto* yp = static_cast<float*>(y);
  cuda_emulation::QueueWork(
      handle->stream, Clobbering(algo, workspace, Im2colBytes(xd, wd, yd), [=] {
        std::vector<double> sum(yd.size(), 0.0);
        ForEachTap(xd, wd, cd, yd, [&](size_t xi, size_t wi, size_t yi) {
          sum[yi] += double{Operand(xp[xi], cd.math)} * Operand(wp[wi], cd.math);
        });
        Blend(sum, al, be, yp);
      }));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t w_desc, const void* w,
                                           const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           const cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workspace,
                                           size_t workspace_bytes, const void* beta,
                                           const cudnnTensorDescriptor_t dx_desc, void* dx) {
  if (handle == nullptr || !Consistent(*dx_desc, *w_desc, *conv, *dy_desc) ||
      !WorkspaceFits(algo, Im2colBytes(*dx_desc, *w_desc, *dy_desc), workspace, workspace_bytes)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(w, w_desc->size(), "cudnnConvolutionBackwardData w");
  cuda_emulation::CheckDeviceFloats(dy, dy_desc->size(), "cudnnConvolutionBackwardData dy");
  cuda_emulation::CheckDeviceFloats(dx, dx_desc->size(), "cudnnConvolutionBackwardData dx");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const cudnnTensorStruct xd = *dx_desc, yd = *dy_desc;
  const cudnnFilterStruct wd = *w_desc;
  const cudnnConvolutionStruct cd = *conv;
  const auto* wp = static_cast<const float*>(w);
  const auto* dyp = static_cast<const float*>(dy);
  auto* dxp = static_cast<float*>(dx);
  cuda_emulation::QueueWork(
      handle->stream, Clobbering(algo, workspace, Im2colBytes(xd, wd, yd), [=] {
        std::vector<double> sum(xd.size(), 0.0);
        ForEachTap(xd, wd, cd, yd, [&](size_t xi, size_t wi, size_t yi) {
          sum[xi] += double{Operand(wp[wi], cd.math)} * Operand(dyp[yi], cd.math);
        });
        Blend(sum, al, be, dxp);
      }));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t x_desc, const void* x,
                                             const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace,
                                             size_t workspace_bytes, const void* beta,
                                             const cudnnFilterDescriptor_t dw_desc, void* dw) {
  if (handle == nullptr || !Consistent(*x_desc, *dw_desc, *conv, *dy_desc) ||
      !WorkspaceFits(algo, Im2colBytes(*x_desc, *dw_desc, *dy_desc), workspace, workspace_bytes)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(x, x_desc->size(), "cudnnConvolutionBackwardFilter x");
  cuda_emulation::CheckDeviceFloats(dy, dy_desc->size(), "cudnnConvolutionBackwardFilter dy");
  cuda_emulation::CheckDeviceFloats(dw, dw_desc->size(), "cudnnConvolutionBackwardFilter dw");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const cudnnTensorStruct xd = *x_desc, yd = *dy_desc;
  const cudnnFilterStruct wd = *dw_desc;
  const cudnnConvolutionStruct cd = *conv;
  const auto* xp = static_cast<const float*>(x);
  const auto* dyp = static_cast<const float*>(dy);
  auto* dwp = static_cast<float*>(dw);
  cuda_emulation::QueueWork(
      handle->stream, Clobbering(algo, workspace, Im2colBytes(xd, wd, yd), [=] {
        std::vector<double> sum(wd.size(), 0.0);
        ForEachTap(xd, wd, cd, yd, [&](size_t xi, size_t wi, size_t yi) {
          sum[wi] += double{Operand(xp[xi], cd.math)} * Operand(dyp[yi], cd.math);
        });
        Blend(sum, al, be, dwp);
      }));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                           const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           const void* beta, const cudnnTensorDescriptor_t db_desc,
                                           void* db) {
  if (handle == nullptr || db_desc->n != 1 || db_desc->c != dy_desc->c || db_desc->h != 1 ||
      db_desc->w != 1) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(dy, dy_desc->size(), "cudnnConvolutionBackwardBias dy");
  cuda_emulation::CheckDeviceFloats(db, db_desc->size(), "cudnnConvolutionBackwardBias db");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const cudnnTensorStruct yd = *dy_desc;
  const auto* dyp = static_cast<const float*>(dy);
  auto* dbp = static_cast<float*>(db);
  cuda_emulation::QueueWork(handle->stream, [=] {
    std::vector<double> sum(yd.c, 0.0);
    for (int n = 0; n < yd.n; ++n) {
      for (int k = 0; k < yd.c; ++k) {
        for (int p = 0; p < yd.h * yd.w; ++p) sum[k] += dyp[yd.at(n, k, 0, 0) + p];
      }
    }
    Blend(sum, al, be, dbp);
  });
  return CUDNN_STATUS_SUCCESS;
}

// C = alpha * A + beta * C, A broadcast along its dimensions of size 1.
cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                             const cudnnTensorDescriptor_t a_desc, const void* a, const void* beta,
                             const cudnnTensorDescriptor_t c_desc, void* c) {
  const cudnnTensorStruct ad = *a_desc, cd = *c_desc;
  const auto fits = [](int a_dim, int c_dim) { return a_dim == 1 || a_dim == c_dim; };
  if (handle == nullptr || !fits(ad.n, cd.n) || !fits(ad.c, cd.c) || !fits(ad.h, cd.h) ||
      !fits(ad.w, cd.w)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(a, ad.size(), "cudnnAddTensor A");
  cuda_emulation::CheckDeviceFloats(c, cd.size(), "cudnnAddTensor C");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const auto* ap = static_cast<const float*>(a);
  auto* cp = static_cast<float*>(c);
  cuda_emulation::QueueWork(handle->stream, [=] {
    for (int n = 0; n < cd.n; ++n) {
      for (int k = 0; k < cd.c; ++k) {
        for (int h = 0; h < cd.h; ++h) {
          for (int w = 0; w < cd.w; ++w) {
            const float from = ap[ad.at(n % ad.n, k % ad.c, h % ad.h, w % ad.w)];
            float& to = cp[cd.at(n, k, h, w)];
            to = al * from + (be == 0.0f ? 0.0f : be * to);
          }
        }
      }
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* desc) {
  *desc = new cudnnPoolingStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t desc, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int window_h, int window_w,
                                          int pad_h, int pad_w, int stride_h, int stride_w) {
  if (desc == nullptr || !Positive({window_h, window_w, stride_h, stride_w}) || pad_h < 0 ||
      pad_w < 0 || (nan != CUDNN_NOT_PROPAGATE_NAN && nan != CUDNN_PROPAGATE_NAN)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (window_h != window_w || stride_h != stride_w || pad_h != 0 || pad_w != 0 ||
      (mode != CUDNN_POOLING_MAX_DETERMINISTIC &&
       mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)) {
    return CUDNN_STATUS_NOT_SUPPORTED;  // not emulated
  }
  *desc = {mode == CUDNN_POOLING_MAX_DETERMINISTIC, window_h, stride_h};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

// y[n, c, oh, ow]: the max or mean of x's window at (oh * stride, ow * stride).
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pool,
                                  const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                  const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t y_desc, void* y) {
  if (handle == nullptr || !Pools(*pool, *x_desc, *y_desc)) return CUDNN_STATUS_BAD_PARAM;
  cuda_emulation::CheckDeviceFloats(x, x_desc->size(), "cudnnPoolingForward x");
  cuda_emulation::CheckDeviceFloats(y, y_desc->size(), "cudnnPoolingForward y");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const cudnnPoolingStruct pd = *pool;
  const cudnnTensorStruct xd = *x_desc, yd = *y_desc;
  const auto* xp = static_cast<const float*>(x);
  auto* yp = static_cast<float*>(y);
  cuda_emulation::QueueWork(handle->stream, [=] {
    std::vector<double> out(yd.size());
    ForEachWindow(pd, xd, yd, [&](size_t yi, const std::vector<size_t>& window) {
      double v = pd.max ? xp[window[0]] : 0.0;
      for (size_t xi : window) v = pd.max ? std::max<double>(v, xp[xi]) : v + xp[xi];
      out[yi] = pd.max ? v : v / window.size();
    });
    Blend(out, al, be, yp);
  });
  return CUDNN_STATUS_SUCCESS;
}

// dx: each window's dy to its first input equal to y (max), or shared equally (average).
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pool,
                                   const void* alpha, const cudnnTensorDescriptor_t y_desc,
                                   const void* y, const cudnnTensorDescriptor_t dy_desc,
                                   const void* dy, const cudnnTensorDescriptor_t x_desc,
                                   const void* x, const void* beta,
                                   const cudnnTensorDescriptor_t dx_desc, void* dx) {
  const cudnnTensorStruct xd = *x_desc, yd = *y_desc;
  if (handle == nullptr || !Pools(*pool, xd, yd) || !Same(yd, *dy_desc) || !Same(xd, *dx_desc)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(y, yd.size(), "cudnnPoolingBackward y");
  cuda_emulation::CheckDeviceFloats(dy, yd.size(), "cudnnPoolingBackward dy");
  cuda_emulation::CheckDeviceFloats(x, xd.size(), "cudnnPoolingBackward x");
  cuda_emulation::CheckDeviceFloats(dx, xd.size(), "cudnnPoolingBackward dx");
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const cudnnPoolingStruct pd = *pool;
  const auto* xp = static_cast<const float*>(x);
  const auto* yp = static_cast<const float*>(y);
  const auto* dyp = static_cast<const float*>(dy);
  auto* dxp = static_cast<float*>(dx);
  cuda_emulation::QueueWork(handle->stream, [=] {
    std::vector<double> grad(xd.size(), 0.0);
    ForEachWindow(pd, xd, yd, [&](size_t yi, const std::vector<size_t>& window) {
      for (size_t xi : window) {
        if (!pd.max) {
          grad[xi] += dyp[yi] / window.size();
        } else if (xp[xi] == yp[yi]) {
          grad[xi] += dyp[yi];
          break;
        }
      }
    });
    Blend(grad, al, be, dxp);
  });
  return CUDNN_STATUS_SUCCESS;
}

// Per channel over its n * h * w values m: the batch's mean and biased variance normalise x;
// the running variance moves by the unbiased one (m / (m - 1) times it).
cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    void* y, const cudnnTensorDescriptor_t scale_desc, const void* scale, const void* bias,
    double average_factor, void* running_mean, void* running_variance, double epsilon,
    void* save_mean, void* save_inv_variance) {
  const cudnnTensorStruct xd = *x_desc;
  if (handle == nullptr || !NormShapes(mode, xd, {y_desc}, *scale_desc) || epsilon < 0 ||
      (running_mean == nullptr) != (running_variance == nullptr) ||
      (save_mean == nullptr) != (save_inv_variance == nullptr)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cuda_emulation::CheckDeviceFloats(x, xd.size(), "cudnnBatchNormalizationForwardTraining x");
  cuda_emulation::CheckDeviceFloats(y, xd.size(), "cudnnBatchNormalizationForwardTraining y");
  for (const void* p :
       {scale, bias, static_cast<const void*>(running_mean),
        static_cast<const void*>(running_variance), static_cast<const void*>(save_mean),
        static_cast<const void*>(save_inv_variance)}) {
    if (p != nullptr)
      cuda_emulation::CheckDeviceFloats(p, xd.c,
                                        "cudnnBatchNormalizationForwardTraining per channel");
  }
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  const auto* xp = static_cast<const float*>(x);
  const auto* gamma = static_cast<const float*>(scale);
  const auto* beta_p = static_cast<const float*>(bias);
  auto* yp = static_cast<float*>(y);
  auto* rm = static_cast<float*>(running_mean);
  auto* rv = static_cast<float*>(running_variance);
  auto* sm = static_cast<float*>(save_mean);
  auto* si = static_cast<float*>(save_inv_variance);
  cuda_emulation::QueueWork(handle->stream, [=] {
    const size_t plane = static_cast<size_t>(xd.h) * xd.w;
    const double m = static_cast<double>(xd.n) * plane;
    for (int c = 0; c < xd.c; ++c) {
      double sum = 0, squares = 0;
      for (int n = 0; n < xd.n; ++n) {
        for (size_t p = 0; p < plane; ++p) sum += xp[xd.at(n, c, 0, 0) + p];
      }
      const double mean = sum / m;
      for (int n = 0; n < xd.n; ++n) {
        for (size_t p = 0; p < plane; ++p) {
          const double d = xp[xd.at(n, c, 0, 0) + p] - mean;
          squares += d * d;
        }
      }
      const double variance = squares / m, invstd = 1.0 / std::sqrt(variance + epsilon);
      for (int n = 0; n < xd.n; ++n) {
        for (size_t p = 0; p < plane; ++p) {
          const size_t i = xd.at(n, c, 0, 0) + p;
          const double out = gamma[c] * (xp[i] - mean) * invstd + beta_p[c];
          yp[i] = static_cast<float>(al * out + (be == 0.0f ? 0.0 : double{be} * yp[i]));
        }
      }
      if (rm != nullptr) {
        rm[c] = static_cast<float>((1 - average_factor) * rm[c] + average_factor * mean);
        rv[c] = static_cast<float>((1 - average_factor) * rv[c] +
                                   average_factor * variance * m / (m - 1));
      }
      if (sm != nullptr) {
        sm[c] = static_cast<float>(mean);
        si[c] = static_cast<float>(invstd);
      }
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

// From the saved mean and inverse standard deviation (xhat = (x - mean) invstd), per channel
// over its m values: dbias = sum dy, dscale = sum dy xhat,
// dx = scale invstd (dy - dbias / m - xhat dscale / m).
cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha_data, const void* beta_data,
    const void* alpha_param, const void* beta_param, const cudnnTensorDescriptor_t x_desc,
    const void* x, const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnTensorDescriptor_t dx_desc, void* dx, const cudnnTensorDescriptor_t scale_desc,
    const void* scale, void* scale_diff, void* bias_diff, double epsilon, const void* saved_mean,
    const void* saved_inv_variance) {
  const cudnnTensorStruct xd = *x_desc;
  if (handle == nullptr || !NormShapes(mode, xd, {dy_desc, dx_desc}, *scale_desc) || epsilon < 0 ||
      saved_mean == nullptr || saved_inv_variance == nullptr) {
    return CUDNN_STATUS_BAD_PARAM;  // recomputing the statistics is not emulated
  }
  for (const void* p : {x, dy, static_cast<const void*>(dx)}) {
    cuda_emulation::CheckDeviceFloats(p, xd.size(), "cudnnBatchNormalizationBackward x, dy or dx");
  }
  for (const void* p : {scale, static_cast<const void*>(scale_diff),
                        static_cast<const void*>(bias_diff), saved_mean, saved_inv_variance}) {
    cuda_emulation::CheckDeviceFloats(p, xd.c, "cudnnBatchNormalizationBackward per channel");
  }
  const float ad = *static_cast<const float*>(alpha_data);
  const float bd = *static_cast<const float*>(beta_data);
  const float ap = *static_cast<const float*>(alpha_param);
  const float bp = *static_cast<const float*>(beta_param);
  const auto* xp = static_cast<const float*>(x);
  const auto* dyp = static_cast<const float*>(dy);
  const auto* gamma = static_cast<const float*>(scale);
  const auto* mean = static_cast<const float*>(saved_mean);
  const auto* invstd = static_cast<const float*>(saved_inv_variance);
  auto* dxp = static_cast<float*>(dx);
  auto* dgamma = static_cast<float*>(scale_diff);
  auto* dbeta = static_cast<float*>(bias_diff);
  cuda_emulation::QueueWork(handle->stream, [=] {
    const size_t plane = static_cast<size_t>(xd.h) * xd.w;
    const double m = static_cast<double>(xd.n) * plane;
    for (int c = 0; c < xd.c; ++c) {
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int n = 0; n < xd.n; ++n) {
        for (size_t p = 0; p < plane; ++p) {
          const size_t i = xd.at(n, c, 0, 0) + p;
          sum_dy += dyp[i];
          sum_dy_xhat += dyp[i] * (double{xp[i]} - mean[c]) * invstd[c];
        }
      }
      for (int n = 0; n < xd.n; ++n) {
        for (size_t p = 0; p < plane; ++p) {
          const size_t i = xd.at(n, c, 0, 0) + p;
          const double xhat = (double{xp[i]} - mean[c]) * invstd[c];
          const double g =
              double{gamma[c]} * invstd[c] * (dyp[i] - sum_dy / m - xhat * sum_dy_xhat / m);
          dxp[i] = static_cast<float>(ad * g + (bd == 0.0f ? 0.0 : double{bd} * dxp[i]));
        }
      }
      dgamma[c] =
          static_cast<float>(ap * sum_dy_xhat + (bp == 0.0f ? 0.0 : double{bp} * dgamma[c]));
      dbeta[c] = static_cast<float>(ap * sum_dy + (bp == 0.0f ? 0.0 : double{bp} * dbeta[c]));
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
