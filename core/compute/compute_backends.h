// Chooses and creates a worker's compute backend from the job's `compute:` section.
#ifndef MONSOON_CORE_COMPUTE_COMPUTE_BACKENDS_H_
#define MONSOON_CORE_COMPUTE_COMPUTE_BACKENDS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/compute/compute_backend.h"
#include "core/compute/compute_config.h"

namespace monsoon {

struct BackendSelection {
  std::unique_ptr<ComputeBackend> backend;
  std::string note;  // why `auto` fell back to the CPU; empty otherwise
};

// compute.device:
//   cpu   the OpenBLAS backend with compute.threads threads
//   cuda  the cuBLAS backend on GPU `gpu` (taken modulo the visible devices), from the CUDA
//         plugin; Unavailable, with the reason, when there is no usable device or no plugin
//   auto  cuda when a usable GPU exists, else cpu (the note says why)
// `gpu` < 0 means the launcher gave this task no GPU.
absl::StatusOr<BackendSelection> MakeComputeBackend(const ComputeConfig& compute, int gpu);

// The CUDA plugin this process would load (see PluginPath in compute_backends.cc), when that
// file exists; empty when it does not (a build without the CUDA toolkit has none).
std::string CudaPluginFile();

// One line per usable CUDA device ("cuda:0 (NVIDIA H100 80GB HBM3)"); Unavailable with the
// reason when there is none.
absl::StatusOr<std::vector<std::string>> ListCudaDevices();

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_COMPUTE_BACKENDS_H_
