// ComputeBackend on an NVIDIA GPU: cuBLAS for matrix products, CUDA kernels for the rest.
// Weights, activations and gradients stay in device memory between steps; host<->device copies
// run on a copy stream separate from the compute stream, straight from and into host memory
// pinned by PinHostMemory, through pinned staging buffers owned by the backend otherwise. Plain
// C++: CUDA types stay inside cublas_backend.cu (compiled by nvcc).
#ifndef MONSOON_CORE_COMPUTE_CUDA_CUBLAS_BACKEND_H_
#define MONSOON_CORE_COMPUTE_CUDA_CUBLAS_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/compute/compute_backend.h"
#include "core/compute/compute_config.h"

namespace monsoon {

// Number of CUDA devices this process can use; Unavailable with CUDA's own error string when
// there are none (no driver, no device, CUDA_VISIBLE_DEVICES hides them all).
absl::StatusOr<int> CudaDeviceCount();

struct CublasOptions {
  // The matrix products' arithmetic (cuBLAS's compute type).
  Precision precision = Precision::kFp32;
  // The most device memory a convolution's im2col workspace takes: a batch goes through im2col
  // in chunks of as many examples as fit (one at least, whatever its size).
  size_t conv_workspace_bytes = size_t{256} << 20;
  // Where convolutions, pooling and batch norms find cuDNN (compute.cudnn_path; see
  // CudnnLayers::Open).
  CudnnLibrary cudnn;
  // Dense layers through cuBLASLt's epilogues where it has an algorithm for the shape; false:
  // always the separate cuBLAS calls and kernels (for comparing the two).
  bool cublaslt = true;
};

// A backend on device `device` (an ordinal among the visible devices). Errors carry CUDA's
// message.
absl::StatusOr<std::unique_ptr<ComputeBackend>> CreateCublasBackend(int device,
                                                                    const CublasOptions& options);

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CUDA_CUBLAS_BACKEND_H_
