// CUDA implementation of CublasBackend (see cublas_backend.h). Compiled by nvcc.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/compute/conv_math.h"
#include "core/compute/cuda/cublas_backend.h"
#include "core/compute/cuda/cudnn_layers.h"
#include "core/compute/cuda/launch.h"
#include "core/compute/cuda/lt_dense.h"
#include "core/compute/kernel_math.h"
#include "core/finite.h"

namespace monsoon {
namespace {

constexpr int kThreads = 256;

int Blocks(size_t n) {
  return static_cast<int>(std::min<size_t>((n + kThreads - 1) / kThreads, 65535));
}

// ---- kernels (grid-stride loops; all matrices row-major) ----

__global__ void GatherRowsKernel(const float* table, int cols, const float* index, float* out,
                                 size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    out[i] = GatherElement(table, cols, index, i);
  }
}

__global__ void AddBiasKernel(const float* bias, int rows, int cols, float* x) {
  const size_t n = static_cast<size_t>(rows) * cols;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    x[i] += bias[i % cols];
  }
}

template <Activation F>
__global__ void ActivationForwardKernel(float slope, const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = ActivationElement<F>(slope, x[i]);
  }
}

template <Activation F>
__global__ void ActivationBackwardKernel(float slope, const float* x, const float* y,
                                         const float* dy, float* dx, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const float in = GradientUsesInput(F) ? x[i] : 0.0f;
    dx[i] = ActivationGradient<F>(slope, in, y[i], dy[i]);
  }
}

// One thread per row (see SoftmaxCrossEntropyRow).
__global__ void SoftmaxCrossEntropyKernel(const float* logits, const float* labels, int rows,
                                          int classes, float* dlogits, float* row_loss,
                                          float* row_correct) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  bool correct = false;
  row_loss[r] = SoftmaxCrossEntropyRow(logits + static_cast<size_t>(r) * classes,
                                       static_cast<int>(labels[r]), classes, 1.0f / rows,
                                       dlogits + static_cast<size_t>(r) * classes, &correct);
  row_correct[r] = correct ? 1.0f : 0.0f;
}

// Sums of a[0..n) and b[0..n) (b null: zeros) in two launches: kSumSlices partial sums (each
// over every kSumSlices-th value, in double), then one thread adding them up into WriteLoss.
constexpr int kSumSlices = 64;

__global__ void PairPartialSumsKernel(const float* a, const float* b, size_t n, float* partial) {
  for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < kSumSlices; t += blockDim.x * gridDim.x) {
    double sum_a = 0, sum_b = 0;
    for (size_t i = t; i < n; i += kSumSlices) {
      sum_a += a[i];
      if (b != nullptr) sum_b += b[i];
    }
    partial[t] = static_cast<float>(sum_a);
    partial[kSumSlices + t] = static_cast<float>(sum_b);
  }
}

__global__ void PairTotalKernel(const float* partial, float* loss) {
  constexpr int kLanes = 8;  // independent sums, so that loads need not wait on adds
  double sum_a[kLanes] = {}, sum_b[kLanes] = {};
  for (int t = 0; t < kSumSlices; t += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      sum_a[l] += partial[t + l];
      sum_b[l] += partial[kSumSlices + t + l];
    }
  }
  for (int l = 1; l < kLanes; ++l) {
    sum_a[0] += sum_a[l];
    sum_b[0] += sum_b[l];
  }
  WriteLoss(sum_a[0], sum_b[0], loss);
}

__global__ void MeanSquaredErrorKernel(const float* pred, const float* target, size_t n,
                                       float inv_rows, float* dpred, float* elem_loss) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const float diff = pred[i] - target[i];
    elem_loss[i] = 0.5f * diff * diff;
    dpred[i] = diff * inv_rows;
  }
}

__global__ void NesterovKernel(float lr, float mu, const float* g, float* v, float* w, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    NesterovElement(lr, mu, g[i], &v[i], &w[i]);
  }
}

// Convolution and pooling, one output element per iteration (core/compute/conv_math.h).
__global__ void Im2ColKernel(Conv2dGeometry g, int batch, const float* x, float* cols, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    cols[i] = Im2ColElement(g, batch, x, i);
  }
}

__global__ void ConvOutputKernel(Conv2dGeometry g, int batch, const float* yt, const float* bias,
                                 float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = ConvOutputElement(g, batch, yt, bias, i);
  }
}

__global__ void FilterMajorKernel(Conv2dGeometry g, int batch, const float* dy, float* dyt,
                                  size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    dyt[i] = FilterMajorElement(g, batch, dy, i);
  }
}

__global__ void Col2ImKernel(Conv2dGeometry g, int batch, const float* dcols, float* dx, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    dx[i] = Col2ImElement(g, batch, dcols, i);
  }
}

__global__ void PoolForwardKernel(Pool2dGeometry g, bool max, const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = PoolForwardElement(g, max, x, i);
  }
}

__global__ void PoolBackwardKernel(Pool2dGeometry g, bool max, const float* x, const float* dy,
                                   float* dx, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    dx[i] = PoolBackwardElement(g, max, x, dy, i);
  }
}

__global__ void DropoutForwardKernel(float rate, uint64_t seed, const float* x, float* mask,
                                     float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    mask[i] = DropoutScale(rate, seed, i);
    y[i] = x[i] * mask[i];
  }
}

__global__ void AddKernel(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = a[i] + b[i];
  }
}

__global__ void MultiplyKernel(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    out[i] = a[i] * b[i];
  }
}

__global__ void FillKernel(float* x, size_t n, float value) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    x[i] = value;
  }
}

// Batch normalisation. A channel's sums take two kernels: kBnSlices partial sums per channel
// (one thread each, over every kBnSlices-th of the channel's batch * pixels values), then one
// thread per channel adds up its partial sums.
constexpr int kBnSlices = 256;
// What the partial sums add up: x; (x - mean)^2; dy and dy * xhat (two sums).
enum BnSum { kSumX, kSumSquares, kSumGradients };

__device__ size_t BnIndex(const BatchNormGeometry& g, int c, size_t j) {
  return (j / g.pixels * g.channels + c) * g.pixels + j % g.pixels;
}

// partial[c * kBnSlices + s] (and partial[channels * kBnSlices + ...] for the second sum).
__global__ void BnPartialSumsKernel(BatchNormGeometry g, int batch, int what, const float* x,
                                    const float* dy, const float* mean, const float* invstd,
                                    float* partial) {
  const size_t slices = static_cast<size_t>(g.channels) * kBnSlices;
  const size_t count = static_cast<size_t>(batch) * g.pixels;
  for (size_t t = blockIdx.x * blockDim.x + threadIdx.x; t < slices;
       t += blockDim.x * gridDim.x) {
    const int c = static_cast<int>(t / kBnSlices);
    float first = 0.0f, second = 0.0f;
    for (size_t j = t % kBnSlices; j < count; j += kBnSlices) {
      const size_t i = BnIndex(g, c, j);
      if (what == kSumX) {
        first += x[i];
      } else if (what == kSumSquares) {
        const float d = x[i] - mean[c];
        first += d * d;
      } else {
        first += dy[i];
        second += dy[i] * ((x[i] - mean[c]) * invstd[c]);
      }
    }
    partial[t] = first;
    partial[slices + t] = second;
  }
}

__device__ double BnChannelSum(const float* partial, int c) {
  double sum = 0;
  for (int s = 0; s < kBnSlices; ++s) sum += partial[static_cast<size_t>(c) * kBnSlices + s];
  return sum;
}

__global__ void BnMeanKernel(int channels, double count, const float* partial, float* mean) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < channels; c += blockDim.x * gridDim.x) {
    mean[c] = static_cast<float>(BnChannelSum(partial, c) / count);
  }
}

// invstd from the batch's variance (training: partial holds the squares' sums; the running
// statistics move) or from the running variance (then mean = running_mean).
__global__ void BnInvStdKernel(BatchNormGeometry g, bool training, double count,
                               const float* partial, float* mean, float* invstd,
                               float* running_mean, float* running_var) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < g.channels;
       c += blockDim.x * gridDim.x) {
    float variance = running_var[c];
    if (training) {
      variance = static_cast<float>(BnChannelSum(partial, c) / count);
      BatchNormRunningUpdate(g.momentum, mean[c], variance, count, &running_mean[c],
                             &running_var[c]);
    } else {
      mean[c] = running_mean[c];
    }
    invstd[c] = 1.0f / sqrtf(variance + g.epsilon);
  }
}

__global__ void BnApplyKernel(BatchNormGeometry g, const float* x, const float* gamma,
                              const float* beta, const float* mean, const float* invstd, float* y,
                              size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const int c = static_cast<int>(i / g.pixels % g.channels);
    y[i] = BatchNormElement(x[i], mean[c], invstd[c], gamma[c], beta[c]);
  }
}

__global__ void BnParamGradientsKernel(int channels, const float* partial, float* dgamma,
                                       float* dbeta) {
  const size_t slices = static_cast<size_t>(channels) * kBnSlices;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < channels; c += blockDim.x * gridDim.x) {
    dbeta[c] = static_cast<float>(BnChannelSum(partial, c));
    dgamma[c] = static_cast<float>(BnChannelSum(partial + slices, c));
  }
}

__global__ void BnInputGradientKernel(BatchNormGeometry g, bool training, float inv_count,
                                      const float* x, const float* gamma, const float* mean,
                                      const float* invstd, const float* dy, const float* dgamma,
                                      const float* dbeta, float* dx, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const int c = static_cast<int>(i / g.pixels % g.channels);
    dx[i] = BatchNormGradientElement(training, gamma[c], invstd[c], (x[i] - mean[c]) * invstd[c],
                                     dy[i], dbeta[c] * inv_count, dgamma[c] * inv_count);
  }
}

// Pinned host memory that grows on demand (never shrinks).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  float* data() const { return data_; }
  // Nullptr (and the CUDA error in *error) when it cannot grow.
  float* Reserve(size_t n, cudaError_t* error) {
    if (n <= size_) return data_;
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
    *error =
        cudaMallocHost(reinterpret_cast<void**>(&data_), std::max<size_t>(n, 1) * sizeof(float));
    if (*error != cudaSuccess) return nullptr;
    size_ = n;
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

class CublasBackend : public ComputeBackend {
 public:
  CublasBackend(int device, std::string device_name, const CublasOptions& options)
      : device_(device), device_name_(device_name), options_(options) {}
  ~CublasBackend() override {
    DropGraphs();
    for (const auto* copies : {&started_, &started_uploads_}) {
      for (const auto& [device, copy] : *copies) {
        if (copy.done != nullptr) cudaEventDestroy(copy.done);
      }
    }
    lt_.reset();
    if (handle_ != nullptr) cublasDestroy(handle_);
    if (copy_done_ != nullptr) cudaEventDestroy(copy_done_);
    if (compute_done_ != nullptr) cudaEventDestroy(compute_done_);
    if (copy_ != nullptr) cudaStreamDestroy(copy_);
    if (compute_ != nullptr) cudaStreamDestroy(compute_);
  }

  absl::Status Init() {
    if (!Check(cudaSetDevice(device_), "cudaSetDevice") ||
        !Check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !Check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !Check(cudaEventCreateWithFlags(&copy_done_, cudaEventDisableTiming), "cudaEventCreate") ||
        !Check(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming),
               "cudaEventCreate") ||
        !CheckBlas(cublasCreate(&handle_), "cublasCreate") ||
        !CheckBlas(cublasSetStream(handle_, compute_), "cublasSetStream")) {
      return status_;
    }
    if (options_.cublaslt) {
      auto lt = LtDense::Create(compute_, ComputeType());
      if (!lt.ok()) return lt.status();
      lt_ = *std::move(lt);
    }
    return OpenCudnn();
  }

  // "cuda:0 (NVIDIA H200; cuDNN 9.19.0; dense layers on cuBLASLt (6 of 6 products so far))":
  // after the device's name, what runs convolutions, pooling and batch norms (or why Monsoon's
  // own kernels do), then what runs the dense layers.
  std::string name() const override {
    return absl::StrCat("cuda:", device_, " (", device_name_, "; ", layers_, "; dense layers on ",
                        lt_ != nullptr ? lt_->Report() : std::string("cuBLAS: cuBLASLt off"), ")");
  }
  bool separate_memory() const override { return true; }

  absl::Status Synchronize() override {
    if (status_.ok()) Check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
    if (status_.ok()) Check(cudaGetLastError(), "kernel launch");
    return status_;
  }

  DeviceBuffer Allocate(size_t n) override {
    float* p = nullptr;
    if (!status_.ok() ||
        !Check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(float)),
               absl::StrCat("cudaMalloc of ", n * sizeof(float), " bytes"))) {
      return DeviceBuffer(nullptr, 0, [](float*) {});
    }
    Check(cudaMemsetAsync(p, 0, n * sizeof(float), compute_), "cudaMemsetAsync");
    return DeviceBuffer(p, n, [](float* q) { cudaFree(q); });
  }

  // Page-locks [host, host + n) for the copy engine. A failure leaves the memory pageable (an
  // empty pin) and is not the backend's error.
  HostPin PinHostMemory(float* host, size_t n) override {
    if (!status_.ok() || n == 0) return HostPin();
    if (cudaHostRegister(host, n * sizeof(float), cudaHostRegisterDefault) != cudaSuccess) {
      cudaGetLastError();  // not this backend's error: Synchronize reports the last one
      return HostPin();
    }
    return HostPin([host] { cudaHostUnregister(host); });
  }

  // Pinned `host`: one copy on the copy stream, waited for. Otherwise host -> staging (CPU,
  // while the GPU works) -> device (copy stream). Either upload waits for compute queued
  // before it (which may still read `device`), and compute queued after it waits for the
  // upload.
  void CopyToDevice(const float* host, float* device, size_t n) override {
    if (!status_.ok() || n == 0) return;
    if (Pinned(host, n)) {
      if (QueueUpload(host, device, n)) {
        Check(cudaEventSynchronize(copy_done_), "cudaEventSynchronize");
      }
      return;
    }
    cudaError_t error = cudaSuccess;
    // The previous upload must have left the staging buffer before it is refilled.
    if (!Check(cudaEventSynchronize(copy_done_), "cudaEventSynchronize")) return;
    float* staging = upload_.Reserve(n, &error);
    if (!Check(error, "cudaMallocHost")) return;
    std::memcpy(staging, host, n * sizeof(float));
    QueueUpload(staging, device, n);
  }

  void CopyToHost(const float* device, float* host, size_t n) override {
    CopyToHostFindingNonFinite(device, host, n);
  }

  // Waits for queued compute, then device -> host on the copy stream, straight into pinned
  // `host` (then scanned for the first non-finite value) or through staging (the copy out of
  // it finding that value); or, where StartCopyToHost copies tile the range, waits for those
  // and unpacks them. After an error: n (Synchronize reports the error).
  size_t CopyToHostFindingNonFinite(const float* device, float* host, size_t n) override {
    if (!status_.ok() || n == 0) return n;
    if (const std::optional<size_t> first = FinishStartedCopies(device, host, n)) return *first;
    const bool direct = Pinned(host, n);
    cudaError_t error = cudaSuccess;
    float* to = direct ? host : download_.Reserve(n, &error);
    if (!Check(error, "cudaMallocHost") || !QueueDownload(device, to, n) ||
        !Check(cudaStreamSynchronize(copy_), "cudaStreamSynchronize")) {
      return n;
    }
    return direct ? FirstNonFinite(absl::MakeConstSpan(host, n))
                  : CopyFindingNonFinite(to, host, n);
  }

  // device -> host (pinned) or its staging buffer, on the copy stream once the compute queued
  // so far is done; compute queued later runs meanwhile. Each started range keeps its staging
  // buffer and event for the next step (a model streams the same ranges every step).
  void StartCopyToHost(const float* device, float* host, size_t n) override {
    if (!status_.ok() || n == 0) return;
    StartedCopy* const started = Started(&started_, device);
    if (started == nullptr) return;
    StartedCopy& copy = *started;
    // A copy never collected by CopyToHost must be done before its buffer is written again.
    if (copy.pending && !Check(cudaEventSynchronize(copy.done), "cudaEventSynchronize")) return;
    copy.direct = Pinned(host, n);
    cudaError_t error = cudaSuccess;
    float* to = copy.direct ? host : copy.staging.Reserve(n, &error);
    if (!Check(error, "cudaMallocHost") || !QueueDownload(device, to, n) ||
        !Check(cudaEventRecord(copy.done, copy_), "cudaEventRecord")) {
      return;
    }
    copy.host = host;
    copy.n = n;
    copy.pending = true;
  }

  // [host, host + n) -> device on the copy stream once the compute queued so far is done,
  // straight from pinned `host` or from a staging buffer of this range's own (filled now, so
  // `host` is free at once); compute waits for it only from AwaitStartedUploads on.
  void StartCopyToDevice(const float* host, float* device, size_t n) override {
    if (!status_.ok() || n == 0) return;
    StartedCopy* const copy = Started(&started_uploads_, device);
    if (copy == nullptr) return;
    const float* from = host;
    if (!Pinned(host, n)) {
      // The range's previous upload must have left the staging buffer.
      if (!Check(cudaEventSynchronize(copy->done), "cudaEventSynchronize")) return;
      cudaError_t error = cudaSuccess;
      float* staging = copy->staging.Reserve(n, &error);
      if (!Check(error, "cudaMallocHost")) return;
      std::memcpy(staging, host, n * sizeof(float));
      from = staging;
    }
    if (!CopyAfterCompute() ||
        !Check(cudaMemcpyAsync(device, from, n * sizeof(float), cudaMemcpyHostToDevice, copy_),
               "cudaMemcpyAsync (host to device)") ||
        !Check(cudaEventRecord(copy->done, copy_), "cudaEventRecord")) {
      return;
    }
    copy->pending = true;
  }

  void AwaitStartedUploads() override {
    for (auto& [device, copy] : started_uploads_) {
      if (!copy.pending) continue;
      if (!Check(cudaStreamWaitEvent(compute_, copy.done, 0), "cudaStreamWaitEvent")) return;
      copy.pending = false;
    }
  }

  void CopyOnDevice(const float* from, float* to, size_t n) override {
    if (!status_.ok() || n == 0 || from == to) return;
    Check(cudaMemcpyAsync(to, from, n * sizeof(float), cudaMemcpyDeviceToDevice, compute_),
          "cudaMemcpyAsync (device to device)");
  }

  // Graphs: the compute stream captured (this thread's calls only) into a CUDA Graph.
  bool BeginGraph() override {
    if (!status_.ok() || capturing_) return false;
    if (cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();  // no graphs here: not an error of the backend's
      return false;
    }
    capturing_ = true;
    return true;
  }

  // A failed recording (a call that cannot be captured invalidates it, and may have recorded
  // its error) leaves the backend as it was before BeginGraph: healthy, nothing run.
  int EndGraph() override {
    if (!capturing_) return -1;
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    const bool recorded = cudaStreamEndCapture(compute_, &graph) == cudaSuccess && status_.ok() &&
                          cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (!recorded) {
      cudaGetLastError();
      status_ = absl::OkStatus();
      return -1;
    }
    graphs_.push_back(exec);
    return static_cast<int>(graphs_.size()) - 1;
  }

  bool RunGraph(int graph) override {
    if (!status_.ok() || graph < 0 || graph >= static_cast<int>(graphs_.size()) ||
        graphs_[graph] == nullptr) {
      return false;
    }
    return Check(cudaGraphLaunch(graphs_[graph], compute_), "cudaGraphLaunch");
  }

  void DropGraph(int graph) override {
    if (graph < 0 || graph >= static_cast<int>(graphs_.size()) || graphs_[graph] == nullptr) {
      return;
    }
    cudaGraphExecDestroy(graphs_[graph]);
    graphs_[graph] = nullptr;
  }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            const float* b, float beta, float* c) override {
    if (!status_.ok()) return;
    const int lda = trans_a ? m : k;
    const int ldb = trans_b ? k : n;
    CheckBlas(cublasGemmEx(handle_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                           trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F,
                           ldb, a, CUDA_R_32F, lda, &beta, c, CUDA_R_32F, n, ComputeType(),
                           CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
  }

  // The product, its bias and a fused ReLU in one cuBLASLt call where it is on and has an
  // algorithm for the shape, else ComputeBackend's separate calls.
  void DenseForward(const DenseGeometry& g, const float* x, const float* w, const float* b,
                    int batch, float* y) override {
    if (!status_.ok()) return;
    if (lt_ == nullptr || !RanOnLibrary(lt_->Forward(g, x, w, b, batch, y))) {
      ComputeBackend::DenseForward(g, x, w, b, batch, y);
    }
  }

  // dw with db summed in the same cuBLASLt call where it is on and has an algorithm for the
  // shape, else ComputeBackend's separate calls.
  void DenseWeightGradient(const DenseGeometry& g, const float* x, const float* dy, int batch,
                           float* dw, float* db) override {
    if (!status_.ok()) return;
    if (lt_ == nullptr || !RanOnLibrary(lt_->WeightGradient(g, x, dy, batch, dw, db))) {
      ComputeBackend::DenseWeightGradient(g, x, dy, batch, dw, db);
    }
  }

  void GatherRows(const float* table, int cols, const float* index, int rows, float* out) override {
    const size_t n = static_cast<size_t>(rows) * cols;
    if (!status_.ok() || n == 0) return;
    MONSOON_LAUNCH(GatherRowsKernel, Blocks(n), kThreads, compute_, table, cols, index, out, n);
  }

  void AddBias(const float* bias, int rows, int cols, float* x) override {
    if (!status_.ok()) return;
    MONSOON_LAUNCH(AddBiasKernel, Blocks(static_cast<size_t>(rows) * cols), kThreads, compute_,
                   bias, rows, cols, x);
  }

  // out = X^T 1: a matrix-vector product with a vector of ones.
  void ColumnSum(const float* x, int rows, int cols, float* out) override {
    if (!status_.ok()) return;
    const float* ones = Ones(rows);
    if (ones == nullptr) return;
    const float one = 1.0f, zero = 0.0f;
    CheckBlas(cublasSgemv(handle_, CUBLAS_OP_N, cols, rows, &one, x, cols, ones, 1, &zero, out, 1),
              "cublasSgemv");
  }

  void ActivationForward(ActivationFn f, const float* x, float* y, size_t n) override {
    if (!status_.ok() || n == 0) return;
    DispatchActivation(f.kind, [&](auto kind) {
      MONSOON_LAUNCH(ActivationForwardKernel<decltype(kind)::value>, Blocks(n), kThreads, compute_,
                     f.slope, x, y, n);
    });
  }

  void ActivationBackward(ActivationFn f, const float* x, const float* y, const float* dy,
                          float* dx, size_t n) override {
    if (!status_.ok() || n == 0) return;
    DispatchActivation(f.kind, [&](auto kind) {
      MONSOON_LAUNCH(ActivationBackwardKernel<decltype(kind)::value>, Blocks(n), kThreads,
                     compute_, f.slope, x, y, dy, dx, n);
    });
  }

  // Per-row losses and hits into scratch, then their sums into `loss` (SumPairInto).
  void SoftmaxCrossEntropy(const float* logits, const float* labels, int rows, int classes,
                           float* dlogits, float* loss) override {
    const size_t n = static_cast<size_t>(rows);
    float* scratch = Scratch(2 * n + 2 * kSumSlices);
    if (scratch == nullptr) return;
    if (n > 0) {
      MONSOON_LAUNCH(SoftmaxCrossEntropyKernel, (rows + kThreads - 1) / kThreads, kThreads,
                     compute_, logits, labels, rows, classes, dlogits, scratch, scratch + n);
    }
    SumPairInto(scratch, scratch + n, n, scratch + 2 * n, loss);
  }

  void MeanSquaredError(const float* pred, const float* target, int rows, int cols, float* dpred,
                        float* loss) override {
    const size_t n = static_cast<size_t>(rows) * cols;
    float* scratch = Scratch(n + 2 * kSumSlices);
    if (scratch == nullptr) return;
    if (n > 0) {
      MONSOON_LAUNCH(MeanSquaredErrorKernel, Blocks(n), kThreads, compute_, pred, target, n,
                     1.0f / rows, dpred, scratch);
    }
    SumPairInto(scratch, nullptr, n, scratch + n, loss);
  }

  void Axpy(float alpha, const float* x, float* y, size_t n) override {
    if (!status_.ok()) return;
    CheckBlas(cublasSaxpy(handle_, static_cast<int>(n), &alpha, x, 1, y, 1), "cublasSaxpy");
  }

  void NesterovStep(float learning_rate, float momentum, const float* g, float* v, float* w,
                    size_t n) override {
    if (!status_.ok() || n == 0) return;
    MONSOON_LAUNCH(NesterovKernel, Blocks(n), kThreads, compute_, learning_rate, momentum, g, v, w,
                   n);
  }

  // im2col and one SGEMM per product (the scheme in core/compute/conv_math.h), over chunks of the
  // batch that keep the workspace within options_.conv_workspace_bytes; on the plain layout
  // without fused ReLUs (NativeChannelBlock is 0, and Model plans no fusion then).
  void Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                     int batch, float* y) override {
    if (!Implemented(g) || batch == 0) return;
    if (cudnn_ != nullptr && CudnnLayers::Takes(g) &&
        RanOnLibrary(cudnn_->Conv2dForward(g, x, w, b, batch, y, CudnnWorkspace()))) {
      return;
    }
    const size_t pixels = static_cast<size_t>(g.out_height) * g.out_width;
    const int chunk = ConvChunk(batch, (g.patch() + g.filters) * pixels);
    float* cols = ConvWorkspace((g.patch() + g.filters) * pixels * chunk);
    if (cols == nullptr) return;
    for (int first = 0; first < batch; first += chunk) {
      const int n = std::min(chunk, batch - first);
      const size_t columns = pixels * n;
      float* yt = cols + g.patch() * columns;
      MONSOON_LAUNCH(Im2ColKernel, Blocks(g.patch() * columns), kThreads, compute_, g, n,
                     x + InputOffset(g, first), cols, g.patch() * columns);
      Gemm(false, false, g.filters, static_cast<int>(columns), g.patch(), 1.0f, w, cols, 0.0f,
           yt);
      MONSOON_LAUNCH(ConvOutputKernel, Blocks(g.filters * columns), kThreads, compute_, g, n, yt,
                     b, y + OutputOffset(g, first), g.filters * columns);
    }
  }

  // dw and db summed over the batch's chunks (the first overwrites them); dx chunk by chunk.
  // The first layer's backward (dx null) reserves no room for the input gradient's columns.
  void Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                      int batch, float* dw, float* db, float* dx) override {
    if (!Implemented(g)) return;
    const size_t patch = g.patch();
    if (batch == 0) {  // no examples: the gradients are zero, as they are overwritten
      Check(cudaMemsetAsync(dw, 0, patch * g.filters * sizeof(float), compute_), "zero dw");
      Check(cudaMemsetAsync(db, 0, g.filters * sizeof(float), compute_), "zero db");
      return;
    }
    if (cudnn_ != nullptr && CudnnLayers::Takes(g) &&
        RanOnLibrary(cudnn_->Conv2dBackward(g, x, w, dy, batch, dw, db, dx, CudnnWorkspace()))) {
      return;
    }
    const size_t pixels = static_cast<size_t>(g.out_height) * g.out_width;
    const size_t per_column = patch + g.filters + (dx != nullptr ? patch : 0);
    const int chunk = ConvChunk(batch, per_column * pixels);
    float* cols = ConvWorkspace(per_column * pixels * chunk);
    const float* ones = Ones(pixels * chunk);
    if (cols == nullptr || ones == nullptr) return;
    for (int first = 0; first < batch; first += chunk) {
      const int n = std::min(chunk, batch - first);
      const size_t columns = pixels * n;
      float* dyt = cols + patch * columns;
      float* dcols = dyt + g.filters * columns;
      const float accumulate = first == 0 ? 0.0f : 1.0f;
      MONSOON_LAUNCH(Im2ColKernel, Blocks(patch * columns), kThreads, compute_, g, n,
                     x + InputOffset(g, first), cols, patch * columns);
      MONSOON_LAUNCH(FilterMajorKernel, Blocks(g.filters * columns), kThreads, compute_, g, n,
                     dy + OutputOffset(g, first), dyt, g.filters * columns);
      const int m = static_cast<int>(columns);
      Gemm(false, true, g.filters, g.patch(), m, 1.0f, dyt, cols, accumulate, dw);
      Gemm(false, false, g.filters, 1, m, 1.0f, dyt, ones, accumulate, db);
      if (dx == nullptr) continue;
      Gemm(true, false, g.patch(), m, g.filters, 1.0f, w, dyt, 0.0f, dcols);
      const size_t inputs = static_cast<size_t>(n) * g.channels * g.height * g.width;
      MONSOON_LAUNCH(Col2ImKernel, Blocks(inputs), kThreads, compute_, g, n, dcols,
                     dx + InputOffset(g, first), inputs);
    }
  }

  void Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch, float* y,
                     uint8_t* /*workspace*/) override {
    if (!Implemented(g)) return;
    const size_t n = static_cast<size_t>(batch) * g.channels * g.out_height * g.out_width;
    if (!status_.ok() || n == 0) return;
    if (cudnn_ != nullptr && CudnnLayers::Takes(g)) {
      return Record(cudnn_->Pool2dForward(g, kind, x, batch, y));
    }
    MONSOON_LAUNCH(PoolForwardKernel, Blocks(n), kThreads, compute_, g, kind == PoolKind::kMax, x,
                   y, n);
  }

  void Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x, const float* y,
                      const uint8_t* /*workspace*/, const float* dy, int batch,
                      float* dx) override {
    if (!Implemented(g)) return;
    const size_t n = static_cast<size_t>(batch) * g.channels * g.height * g.width;
    if (!status_.ok() || n == 0) return;
    if (cudnn_ != nullptr && CudnnLayers::Takes(g)) {
      return Record(cudnn_->Pool2dBackward(g, kind, x, y, dy, batch, dx));
    }
    MONSOON_LAUNCH(PoolBackwardKernel, Blocks(n), kThreads, compute_, g, kind == PoolKind::kMax, x,
                   dy, dx, n);
  }

  void Add(const float* a, const float* b, float* y, size_t n) override {
    if (!status_.ok() || n == 0) return;
    MONSOON_LAUNCH(AddKernel, Blocks(n), kThreads, compute_, a, b, y, n);
  }

  void DropoutForward(float rate, uint64_t seed, const float* x, float* mask, float* y,
                      size_t n) override {
    if (!status_.ok() || n == 0) return;
    MONSOON_LAUNCH(DropoutForwardKernel, Blocks(n), kThreads, compute_, rate, seed, x, mask, y, n);
  }

  void DropoutBackward(const float* mask, const float* dy, float* dx, size_t n) override {
    if (!status_.ok() || n == 0) return;
    MONSOON_LAUNCH(MultiplyKernel, Blocks(n), kThreads, compute_, mask, dy, dx, n);
  }

  void BatchNormForward(const BatchNormGeometry& g, bool training, const float* x,
                        const float* gamma, const float* beta, float* running_mean,
                        float* running_var, int batch, float* y, float* mean,
                        float* invstd) override {
    if (OnCudnn(g, training, batch) && x != y) {
      Record(cudnn_->BatchNormTrainingForward(g, x, gamma, beta, running_mean, running_var, batch,
                                              y, mean, invstd));
      return;
    }
    float* partial = BnPartials(g.channels);
    if (partial == nullptr) return;
    const double count = static_cast<double>(batch) * g.pixels;
    const int slices = g.channels * kBnSlices;
    if (training) {
      MONSOON_LAUNCH(BnPartialSumsKernel, Blocks(slices), kThreads, compute_, g, batch, kSumX, x,
                     nullptr, nullptr, nullptr, partial);
      MONSOON_LAUNCH(BnMeanKernel, Blocks(g.channels), kThreads, compute_, g.channels, count,
                     partial, mean);
      MONSOON_LAUNCH(BnPartialSumsKernel, Blocks(slices), kThreads, compute_, g, batch,
                     kSumSquares, x, nullptr, mean, nullptr, partial);
    }
    MONSOON_LAUNCH(BnInvStdKernel, Blocks(g.channels), kThreads, compute_, g, training, count,
                   partial, mean, invstd, running_mean, running_var);
    const size_t n = static_cast<size_t>(batch) * g.channels * g.pixels;
    MONSOON_LAUNCH(BnApplyKernel, Blocks(n), kThreads, compute_, g, x, gamma, beta, mean, invstd,
                   y, n);
  }

  void BatchNormBackward(const BatchNormGeometry& g, bool training, const float* x,
                         const float* gamma, const float* mean, const float* invstd,
                         const float* dy, int batch, float* dgamma, float* dbeta,
                         float* dx) override {
    if (OnCudnn(g, training, batch) && dx != nullptr) {
      Record(cudnn_->BatchNormTrainingBackward(g, x, gamma, mean, invstd, dy, batch, dgamma, dbeta,
                                               dx));
      return;
    }
    float* partial = BnPartials(g.channels);
    if (partial == nullptr) return;
    MONSOON_LAUNCH(BnPartialSumsKernel, Blocks(g.channels * kBnSlices), kThreads, compute_, g,
                   batch, kSumGradients, x, dy, mean, invstd, partial);
    MONSOON_LAUNCH(BnParamGradientsKernel, Blocks(g.channels), kThreads, compute_, g.channels,
                   partial, dgamma, dbeta);
    if (dx == nullptr) return;
    const size_t n = static_cast<size_t>(batch) * g.channels * g.pixels;
    const float inv_count = static_cast<float>(1.0 / (static_cast<double>(batch) * g.pixels));
    MONSOON_LAUNCH(BnInputGradientKernel, Blocks(n), kThreads, compute_, g, training, inv_count,
                   x, gamma, mean, invstd, dy, dgamma, dbeta, dx, n);
  }

 private:
  // Whether to run a kernel on the geometry: no earlier error, the plain layout and no fused
  // ReLU. Records Unimplemented for the others (a caller that planned for another backend).
  template <class Geometry>
  bool Implemented(const Geometry& g) {
    if (!status_.ok()) return false;
    if (IsPlainAndUnfused(g)) return true;
    if (status_.ok()) {
      status_ = absl::UnimplementedError(absl::StrCat(
          "CUDA device ", device_,
          ": convolution and pooling take the plain layout without a fused ReLU only"));
    }
    return false;
  }
  static bool IsPlainAndUnfused(const Conv2dGeometry& g) {
    return g.in == Layout::kPlain && g.out == Layout::kPlain && g.relu == FusedRelu::kNone;
  }
  static bool IsPlainAndUnfused(const Pool2dGeometry& g) {
    return g.layout == Layout::kPlain && g.relu == FusedRelu::kNone;
  }

  // Loads cuDNN as options_.cudnn says. `auto` without a usable cuDNN is not an error:
  // layers_ says why the backend's own kernels run.
  absl::Status OpenCudnn() {
    if (options_.cudnn.where == CudnnLibrary::Where::kOff) {
      layers_ = "im2col: compute.cudnn_path is off";
      return absl::OkStatus();
    }
    auto cudnn = CudnnLayers::Open(options_.cudnn, compute_, options_.precision,
                                   options_.conv_workspace_bytes);
    if (!cudnn.ok()) {
      if (options_.cudnn.where != CudnnLibrary::Where::kAuto) return cudnn.status();
      layers_ = absl::StrCat("im2col: ", cudnn.status().message());
      return absl::OkStatus();
    }
    cudnn_ = *std::move(cudnn);
    layers_ = cudnn_->version();
    return absl::OkStatus();
  }

  // Whether batch normalisation in this mode goes to cuDNN: training (cuDNN's backward takes
  // the batch's statistics) over more than one value per channel.
  bool OnCudnn(const BatchNormGeometry& g, bool training, int batch) const {
    return status_.ok() && cudnn_ != nullptr && training && int64_t{batch} * g.pixels > 1;
  }

  // Records a cuDNN or cuBLASLt call's error as the backend's.
  void Record(const absl::Status& status) {
    if (!status.ok() && status_.ok()) {
      status_ = absl::Status(status.code(),
                             absl::StrCat("CUDA device ", device_, ": ", status.message()));
    }
  }
  // Whether a cuDNN or cuBLASLt call ran (or failed: recorded); false: nothing queued.
  bool RanOnLibrary(const absl::StatusOr<bool>& ran) {
    Record(ran.status());
    return !ran.ok() || *ran;
  }

  // cuDNN's workspace: the convolutions' device workspace.
  CudnnLayers::Workspace CudnnWorkspace() {
    return [this](size_t bytes) -> void* {
      return ConvWorkspace((bytes + sizeof(float) - 1) / sizeof(float));
    };
  }

  // Whether [host, host + n) is page-locked host memory (cudaHostRegister or cudaMallocHost):
  // both ends are, and a range passed in lies in one allocation.
  bool Pinned(const float* host, size_t n) {
    for (const float* p : {host, host + n - 1}) {
      cudaPointerAttributes attributes;
      if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
        cudaGetLastError();  // a pointer CUDA does not know: pageable, not an error
        return false;
      }
      if (attributes.type != cudaMemoryTypeHost) return false;
    }
    return true;
  }

  // Makes the copy stream's next work wait for the compute queued so far.
  bool CopyAfterCompute() {
    return Check(cudaEventRecord(compute_done_, compute_), "cudaEventRecord") &&
           Check(cudaStreamWaitEvent(copy_, compute_done_, 0), "cudaStreamWaitEvent");
  }

  // Queues from (pinned) -> device on the copy stream after the compute queued so far, and
  // makes later compute wait for it (copy_done_).
  bool QueueUpload(const float* from, float* device, size_t n) {
    return CopyAfterCompute() &&
           Check(cudaMemcpyAsync(device, from, n * sizeof(float), cudaMemcpyHostToDevice, copy_),
                 "cudaMemcpyAsync (host to device)") &&
           Check(cudaEventRecord(copy_done_, copy_), "cudaEventRecord") &&
           Check(cudaStreamWaitEvent(compute_, copy_done_, 0), "cudaStreamWaitEvent");
  }

  // Queues device -> to (pinned) on the copy stream after the compute queued so far.
  bool QueueDownload(const float* device, float* to, size_t n) {
    return CopyAfterCompute() &&
           Check(cudaMemcpyAsync(to, device, n * sizeof(float), cudaMemcpyDeviceToHost, copy_),
                 "cudaMemcpyAsync (device to host)");
  }

  // Records the first failure; true when `error` is success.
  bool Check(cudaError_t error, const std::string& what) {
    if (error == cudaSuccess) return true;
    if (status_.ok()) {
      status_ = absl::InternalError(
          absl::StrCat("CUDA device ", device_, ": ", what, ": ", cudaGetErrorString(error)));
    }
    return false;
  }
  bool CheckBlas(cublasStatus_t s, const std::string& what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    if (status_.ok()) {
      status_ = absl::InternalError(
          absl::StrCat("CUDA device ", device_, ": ", what, ": ", cublasGetStatusString(s)));
    }
    return false;
  }

  // cuBLAS's compute type for options_.precision: fp32, or tensor cores that round fp32
  // operands to tf32 or bf16 and sum in fp32.
  cublasComputeType_t ComputeType() const {
    switch (options_.precision) {
      case Precision::kTf32:
        return CUBLAS_COMPUTE_32F_FAST_TF32;
      case Precision::kBf16:
        return CUBLAS_COMPUTE_32F_FAST_16BF;
      case Precision::kFp32:
        break;
    }
    return CUBLAS_COMPUTE_32F;
  }

  // WriteLoss(sum of a, sum of b) into `loss` (b null: 0), through 2 * kSumSlices floats of
  // device memory at `partial`.
  void SumPairInto(const float* a, const float* b, size_t n, float* partial, float* loss) {
    MONSOON_LAUNCH(PairPartialSumsKernel, Blocks(kSumSlices), kThreads, compute_, a, b, n, partial);
    MONSOON_LAUNCH(PairTotalKernel, 1, 1, compute_, partial, loss);
  }

  // `buffer`, one of the backend's own, with room for n floats: regrown when smaller (which
  // drops every graph: one may use the old buffer), never shrunk. Kernels queued before a
  // regrowth may still read the old buffer: cudaFree waits for them. Null after an error.
  float* Reserve(DeviceBuffer* buffer, size_t n) {
    if (!status_.ok()) return nullptr;
    if (buffer->size() < n) {
      *buffer = Allocate(n);
      DropGraphs();
    }
    return status_.ok() ? buffer->data() : nullptr;
  }

  // A device vector of at least n ones (for column sums).
  const float* Ones(size_t n) {
    const bool grows = ones_.size() < n;
    float* ones = Reserve(&ones_, n);
    if (ones != nullptr && grows) {
      MONSOON_LAUNCH(FillKernel, Blocks(n), kThreads, compute_, ones, n, 1.0f);
    }
    return ones;
  }

  // Device scratch of at least n floats (per-row losses).
  float* Scratch(size_t n) { return Reserve(&scratch_, n); }

  // Device room for batch normalisation's two partial sums of each of `channels` channels.
  float* BnPartials(int channels) {
    return Reserve(&bn_partials_, 2 * static_cast<size_t>(channels) * kBnSlices);
  }

  // Examples per im2col chunk: as many as keep `floats_per_example` each within the workspace
  // bound, one at least.
  int ConvChunk(int batch, size_t floats_per_example) const {
    const size_t fit = options_.conv_workspace_bytes / sizeof(float) / floats_per_example;
    return static_cast<int>(std::clamp<size_t>(fit, 1, static_cast<size_t>(batch)));
  }
  static size_t InputOffset(const Conv2dGeometry& g, int example) {
    return static_cast<size_t>(example) * g.channels * g.height * g.width;
  }
  static size_t OutputOffset(const Conv2dGeometry& g, int example) {
    return static_cast<size_t>(example) * g.filters * g.out_height * g.out_width;
  }

  // Device workspace of at least n floats for convolutions (im2col matrices and their
  // products).
  float* ConvWorkspace(size_t n) { return Reserve(&conv_workspace_, n); }

  void DropGraphs() {
    for (int graph = 0; graph < static_cast<int>(graphs_.size()); ++graph) DropGraph(graph);
  }

  // A copy StartCopyToHost queued: into `host` (direct) or `staging`, finished when `done` has
  // fired; pending until CopyToHost has collected it. Or one StartCopyToDevice queued (from
  // `host` or `staging`; `host`, `n` and `direct` unused): pending until AwaitStartedUploads.
  struct StartedCopy {
    PinnedBuffer staging;
    float* host = nullptr;
    size_t n = 0;
    bool direct = false;
    cudaEvent_t done = nullptr;
    bool pending = false;
  };

  // The started copy of `copies` at `device`, its event created; null after an error.
  StartedCopy* Started(std::map<const float*, StartedCopy>* copies, const float* device) {
    StartedCopy& copy = (*copies)[device];
    if (copy.done == nullptr &&
        !Check(cudaEventCreateWithFlags(&copy.done, cudaEventDisableTiming), "cudaEventCreate")) {
      return nullptr;
    }
    return &copy;
  }

  // When pending started copies tile [device, device + n) into [host, host + n) exactly: waits
  // for them, fills host from the staged ones, and returns the index of its first non-finite
  // value (n when none, or after an error).
  std::optional<size_t> FinishStartedCopies(const float* device, float* host, size_t n) {
    std::vector<StartedCopy*> parts;
    size_t covered = 0;
    for (auto it = started_.find(device);
         it != started_.end() && it->first == device + covered && it->second.pending &&
         it->second.host == host + covered && covered < n;
         ++it) {
      parts.push_back(&it->second);
      covered += it->second.n;
    }
    if (covered != n) return std::nullopt;
    size_t first = n;
    size_t offset = 0;
    for (StartedCopy* part : parts) {
      if (!Check(cudaEventSynchronize(part->done), "cudaEventSynchronize")) return n;
      const size_t bad = part->direct
                             ? FirstNonFinite(absl::MakeConstSpan(part->host, part->n))
                             : CopyFindingNonFinite(part->staging.data(), part->host, part->n);
      if (first == n && bad < part->n) first = offset + bad;
      offset += part->n;
      part->pending = false;
    }
    return first;
  }

  const int device_;
  const std::string device_name_;
  const CublasOptions options_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t copy_done_ = nullptr;     // last upload finished reading its staging buffer
  cudaEvent_t compute_done_ = nullptr;  // compute queued before a copy
  cublasHandle_t handle_ = nullptr;
  PinnedBuffer upload_;
  PinnedBuffer download_;
  std::map<const float*, StartedCopy> started_;          // by device address
  std::map<const float*, StartedCopy> started_uploads_;  // by device address
  bool capturing_ = false;                       // between BeginGraph and EndGraph
  std::vector<cudaGraphExec_t> graphs_;          // by number; null once dropped
  DeviceBuffer ones_;
  DeviceBuffer scratch_;
  DeviceBuffer conv_workspace_;
  DeviceBuffer bn_partials_;
  std::unique_ptr<LtDense> lt_;         // null: options_.cublaslt is off
  std::unique_ptr<CudnnLayers> cudnn_;  // null: every layer on own kernels
  std::string layers_;                  // what runs them, for name()
  absl::Status status_;
};

}  // namespace

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("no usable CUDA device: ", cudaGetErrorString(error)));
  }
  if (count == 0) return absl::UnavailableError("no usable CUDA device: none visible");
  return count;
}

absl::StatusOr<std::unique_ptr<ComputeBackend>> CreateCublasBackend(int device,
                                                                    const CublasOptions& options) {
  auto count = CudaDeviceCount();
  if (!count.ok()) return count.status();
  if (device < 0 || device >= *count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", device, " requested; ", *count, " visible"));
  }
  cudaDeviceProp props;
  const cudaError_t error = cudaGetDeviceProperties(&props, device);
  if (error != cudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("CUDA device ", device, ": ", cudaGetErrorString(error)));
  }
  auto backend = std::make_unique<CublasBackend>(device, props.name, options);
  const absl::Status init = backend->Init();
  if (!init.ok()) return init;
  return std::unique_ptr<ComputeBackend>(std::move(backend));
}

}  // namespace monsoon
