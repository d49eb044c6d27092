// The CUDA backend as a plugin: worker/libmonsoon_cuda.so holds CublasBackend and links cuBLAS
// and the CUDA runtime, so that only a process that asks for a GPU loads them. (Loading
// cuBLAS costs every process ~200 MB of resident memory; servers, the launcher and CPU roles
// never pay it.) compute_backends.cc dlopen()s the plugin and calls MonsoonCudaPlugin().
#ifndef MONSOON_WORKER_CUDA_PLUGIN_H_
#define MONSOON_WORKER_CUDA_PLUGIN_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/compute_backend.h"

namespace monsoon {

// The plugin's functions (see worker/cublas_backend.h for their contracts).
struct CudaPluginApi {
  absl::StatusOr<int> (*device_count)();
  absl::StatusOr<std::unique_ptr<ComputeBackend>> (*create_backend)(int device, bool tf32);
};

// The plugin's file name; it lives next to the `monsoon` binary's directory, in worker/.
constexpr char kCudaPluginFile[] = "libmonsoon_cuda.so";
// The one symbol the plugin exports, returning its functions.
constexpr char kCudaPluginSymbol[] = "MonsoonCudaPlugin";

}  // namespace monsoon

#endif  // MONSOON_WORKER_CUDA_PLUGIN_H_
