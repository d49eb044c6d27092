// The entry point of core/compute/cuda/libmonsoon_cuda.so (see cuda_plugin.h).
#include "core/compute/cuda/cuda_plugin.h"

#include "core/compute/cuda/cublas_backend.h"

extern "C" __attribute__((visibility("default"))) const monsoon::CudaPluginApi*
MonsoonCudaPlugin() {
  static const monsoon::CudaPluginApi api = {&monsoon::CudaDeviceCount,
                                             &monsoon::CreateCublasBackend};
  return &api;
}
