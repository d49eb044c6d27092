#include "worker/compute_backends.h"

#include "absl/strings/str_cat.h"
#include "core/cpu_backend.h"
#if MONSOON_WITH_CUDA
#include "worker/cublas_backend.h"
#endif

namespace monsoon {
namespace {

absl::StatusOr<std::unique_ptr<ComputeBackend>> MakeCuda(const ComputeConfig& compute, int gpu) {
  if (gpu < 0) return absl::UnavailableError("this task was given no GPU (CUDA_VISIBLE_DEVICES)");
#if MONSOON_WITH_CUDA
  auto count = CudaDeviceCount();
  if (!count.ok()) return count.status();
  return CreateCublasBackend(gpu % *count, compute.tf32);
#else
  return absl::UnavailableError(
      "this build has no CUDA support (nvcc was not found when it was built)");
#endif
}

}  // namespace

absl::StatusOr<BackendSelection> MakeComputeBackend(const ComputeConfig& compute, int gpu) {
  BackendSelection selection;
  if (compute.device != "cpu") {
    auto cuda = MakeCuda(compute, gpu);
    if (cuda.ok()) {
      selection.backend = std::move(*cuda);
      return selection;
    }
    if (compute.device == "cuda") {
      return absl::Status(cuda.status().code(),
                          absl::StrCat("compute.device is cuda: ", cuda.status().message()));
    }
    selection.note =
        absl::StrCat("compute.device auto: using the CPU (", cuda.status().message(), ")");
  }
  selection.backend = std::make_unique<CpuBackend>(compute.threads);
  return selection;
}

}  // namespace monsoon

namespace monsoon {

absl::StatusOr<std::vector<std::string>> ListCudaDevices() {
#if MONSOON_WITH_CUDA
  auto count = CudaDeviceCount();
  if (!count.ok()) return count.status();
  std::vector<std::string> devices;
  for (int d = 0; d < *count; ++d) {
    auto backend = CreateCublasBackend(d, false);
    if (!backend.ok()) return backend.status();
    devices.push_back((*backend)->name());
  }
  return devices;
#else
  return absl::UnavailableError(
      "this build has no CUDA support (nvcc was not found when it was built)");
#endif
}

}  // namespace monsoon
