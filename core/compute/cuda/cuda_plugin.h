// The CUDA backend as a plugin: libmonsoon_cuda.so holds CublasBackend and links cuBLAS
// and the CUDA runtime, so that only a process that asks for a GPU loads them. (Loading
// cuBLAS costs every process ~200 MB of resident memory; servers, the launcher and CPU roles
// never pay it.) compute_backends.cc dlopen()s the plugin and calls MonsoonCudaPlugin().
#ifndef MONSOON_CORE_COMPUTE_CUDA_CUDA_PLUGIN_H_
#define MONSOON_CORE_COMPUTE_CUDA_CUDA_PLUGIN_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/compute/compute_backend.h"
#include "core/compute/cuda/cublas_backend.h"

namespace monsoon {

// The plugin's functions (see cublas_backend.h for their contracts).
struct CudaPluginApi {
  absl::StatusOr<int> (*device_count)();
  absl::StatusOr<std::unique_ptr<ComputeBackend>> (*create_backend)(int device,
                                                                     const CublasOptions& options);
};

// The plugin's place, under the directory that holds the `monsoon` binary's directory
// (bazel-bin's layout, which the bundle keeps).
constexpr char kCudaPluginFile[] = "core/compute/cuda/libmonsoon_cuda.so";
// The one symbol the plugin exports, returning its functions.
constexpr char kCudaPluginSymbol[] = "MonsoonCudaPlugin";

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CUDA_CUDA_PLUGIN_H_
