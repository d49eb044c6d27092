// A job's `compute:` section: which backend a worker computes on, and its settings.
#ifndef MONSOON_CORE_COMPUTE_COMPUTE_CONFIG_H_
#define MONSOON_CORE_COMPUTE_COMPUTE_CONFIG_H_

#include "core/enum_names.h"

namespace monsoon {

// The compute backend (core/compute/compute_backends.h).
enum class Device { kAuto, kCpu, kCuda };
inline constexpr NamedValue<Device> kDeviceValues[] = {
    {Device::kAuto, "auto"}, {Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}};
inline constexpr EnumNames<Device> kDeviceNames{"device", kDeviceValues};

struct ComputeConfig {
  Device device = Device::kAuto;
  int threads = 1;              // BLAS threads per worker (CPU backend)
  bool tf32 = false;            // let cuBLAS use TF32 tensor cores (CUDA backend)
  int gpu_workspace_mib = 256;  // the CUDA backend's convolution workspace bound
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_COMPUTE_CONFIG_H_
