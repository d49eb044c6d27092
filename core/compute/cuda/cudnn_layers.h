// Convolutions, pooling and batch normalisation through cuDNN 9, for the CUDA backend. cuDNN is
// never linked: it is loaded at run time (dlopen) from where the job says or where a node keeps it,
// and the backend runs its own kernels where it is absent or does not take a geometry. Included by
// CUDA sources only (its types are CUDA's and cuDNN's).
#ifndef MONSOON_CORE_COMPUTE_CUDA_CUDNN_LAYERS_H_
#define MONSOON_CORE_COMPUTE_CUDA_CUDNN_LAYERS_H_

#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/compute/compute_backend.h"
#include "core/compute/compute_config.h"

namespace monsoon {

struct CudnnApi;  // cuDNN's functions, resolved in the loaded library (cudnn_layers.cu)

class CudnnLayers {
 public:
  // Device memory of at least `bytes` for one call, or null after the caller's error.
  using Workspace = std::function<void*(size_t bytes)>;

  // cuDNN from `library` (compute.cudnn_path; not kOff): a libcudnn file, or a directory holding
  // libcudnn.so.9; kAuto tries libcudnn.so.9 on the dynamic linker's path (LD_LIBRARY_PATH),
  // then under $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (NotFound when none is there). Its
  // calls go to `stream`; convolutions compute in `precision` (fp32 exactly; tf32 or bf16
  // allow tf32 tensor cores) with algorithms whose workspace fits `workspace_bytes`. Errors
  // name the library and say what is wrong with it.
  static absl::StatusOr<std::unique_ptr<CudnnLayers>> Open(const CudnnLibrary& library,
                                                           cudaStream_t stream, Precision precision,
                                                           size_t workspace_bytes);
  ~CudnnLayers();
  CudnnLayers(const CudnnLayers&) = delete;
  CudnnLayers& operator=(const CudnnLayers&) = delete;

  // "cuDNN 9.19.0".
  std::string version() const;

  // Whether cuDNN computes the convolution as ComputeBackend defines it: the plain layout, no
  // fused ReLU, and padding that cuDNN's symmetric padding reproduces (pad_top rows above and
  // as many below hold a whole kernel and give out_height; the same for columns).
  static bool Takes(const Conv2dGeometry& g);
  // Whether cuDNN pools as ComputeBackend defines it: the plain layout, no fused ReLU, and an
  // input that holds a whole window and the output size its unpadded windows give.
  static bool Takes(const Pool2dGeometry& g);

  // ComputeBackend's methods of the same names, on the stream. The convolutions return false
  // (queueing nothing) when no algorithm of the shape fits the workspace bound; the caller
  // runs its own. Errors come with cuDNN's message; after one, this object is not used again.
  absl::StatusOr<bool> Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                                     const float* b, int batch, float* y,
                                     const Workspace& workspace);
  absl::StatusOr<bool> Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w,
                                      const float* dy, int batch, float* dw, float* db, float* dx,
                                      const Workspace& workspace);
  // Max pooling's backward sends a window's gradient to its first input equal to y's value.
  absl::Status Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch,
                             float* y);
  absl::Status Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                              const float* y, const float* dy, int batch, float* dx);
  // Training only, y distinct from x (the batch's statistics; mean and invstd as
  // BatchNormForward writes them).
  absl::Status BatchNormTrainingForward(const BatchNormGeometry& g, const float* x,
                                        const float* gamma, const float* beta, float* running_mean,
                                        float* running_var, int batch, float* y, float* mean,
                                        float* invstd);
  // Training only, dx not null.
  absl::Status BatchNormTrainingBackward(const BatchNormGeometry& g, const float* x,
                                         const float* gamma, const float* mean, const float* invstd,
                                         const float* dy, int batch, float* dgamma, float* dbeta,
                                         float* dx);

 private:
  struct ConvPlan;
  struct PoolPlan;
  CudnnLayers(std::unique_ptr<CudnnApi> api, cudnnHandle_t handle, Precision precision,
              size_t workspace_bytes);

  // The shape's descriptors and algorithms, made at its first call.
  absl::StatusOr<ConvPlan*> Plan(const Conv2dGeometry& g, int batch);
  // Each direction's first ranked algorithm within the workspace bound (cuDNN's heuristics,
  // as PyTorch's default); the plan is usable when all three have one.
  absl::Status ChooseAlgorithms(ConvPlan* plan);
  // The pooling's descriptors, made at its first call.
  absl::StatusOr<PoolPlan*> Pool(const Pool2dGeometry& g, PoolKind kind, int batch);
  // Batch normalisation's descriptors: [batch, channels, pixels, 1] and [1, channels, 1, 1].
  absl::StatusOr<std::pair<cudnnTensorDescriptor_t, cudnnTensorDescriptor_t>> Norm(int batch,
                                                                                   int channels,
                                                                                   int pixels);
  // A 4-D float NCHW descriptor, destroyed with this object.
  absl::StatusOr<cudnnTensorDescriptor_t> Tensor(int n, int c, int h, int w);
  absl::Status Check(cudnnStatus_t status, const char* what) const;

  std::unique_ptr<CudnnApi> api_;
  cudnnHandle_t handle_;
  const Precision precision_;
  const size_t workspace_bytes_;
  // Per (geometry, batch): descriptors and the algorithms chosen for them.
  std::map<std::tuple<int, int, int, int, int, int, int, int, int>, std::unique_ptr<ConvPlan>>
      plans_;
  // Per (geometry, kind, batch).
  std::map<std::tuple<int, int, int, int, int, int, int>, std::unique_ptr<PoolPlan>> pools_;
  // Per (batch, channels, pixels): the activations' and the per-channel tensors' descriptors.
  std::map<std::tuple<int, int, int>, std::pair<cudnnTensorDescriptor_t, cudnnTensorDescriptor_t>>
      norms_;
  std::vector<cudnnTensorDescriptor_t> tensors_;  // every one made
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CUDA_CUDNN_LAYERS_H_
