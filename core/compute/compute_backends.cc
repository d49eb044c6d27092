#include "core/compute/compute_backends.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/compute/cpu/cpu_backend.h"
#include "core/compute/cuda/cuda_plugin.h"
#include "core/process/process_setup.h"

namespace monsoon {
namespace {

// Where the plugin is: $MONSOON_CUDA_PLUGIN if set, else kCudaPluginFile under the nearest
// ancestor of this executable's directory that has it (bazel-bin's layout: found from
// bazel-bin/launcher/monsoon and from test binaries alike).
std::string PluginPath() {
  if (const char* path = std::getenv("MONSOON_CUDA_PLUGIN")) return path;
  const std::string exe = SelfExePath();
  if (exe.empty()) return std::filesystem::path(kCudaPluginFile).filename();
  std::error_code ec;
  for (std::filesystem::path dir = std::filesystem::path(exe).parent_path();
       dir.has_relative_path(); dir = dir.parent_path()) {
    const std::filesystem::path candidate = dir / kCudaPluginFile;
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  }
  // Let dlopen search, and name the file when it fails.
  return std::filesystem::path(kCudaPluginFile).filename();
}

}  // namespace

std::string CudaPluginFile() {
  std::error_code ec;
  const std::string path = PluginPath();
  return std::filesystem::exists(path, ec) ? path : "";
}

namespace {

// True when NVIDIA's kernel driver is there (its control device, or its /proc entry).
bool NvidiaDriverPresent() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec) ||
         std::filesystem::exists("/proc/driver/nvidia", ec);
}

// The plugin's functions, loaded once per process; Unavailable says why not.
absl::StatusOr<const CudaPluginApi*> CudaPlugin() {
  static const absl::StatusOr<const CudaPluginApi*>* plugin =
      new absl::StatusOr<const CudaPluginApi*>([]() -> absl::StatusOr<const CudaPluginApi*> {
        const std::string path = PluginPath();
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
          return absl::UnavailableError(absl::StrCat(
              "cannot load the CUDA backend: ", dlerror(),
              " (a build without the CUDA toolkit has no plugin; else copy ", kCudaPluginFile,
              " along with the binary, or set MONSOON_CUDA_PLUGIN)"));
        }
        auto entry = reinterpret_cast<const CudaPluginApi* (*)()>(dlsym(handle, kCudaPluginSymbol));
        if (entry == nullptr) {
          return absl::UnavailableError(absl::StrCat(path, " has no ", kCudaPluginSymbol));
        }
        return entry();
      }());
  return *plugin;
}

absl::StatusOr<std::unique_ptr<ComputeBackend>> MakeCuda(const ComputeConfig& compute, int gpu) {
  if (gpu < 0) return absl::UnavailableError("this task was given no GPU (CUDA_VISIBLE_DEVICES)");
  // `auto` on a machine without NVIDIA's driver: the CPU, without loading the CUDA libraries
  // (about 95 MiB a process) only to learn there is no device. `cuda` tries, and says why not.
  if (compute.device == Device::kAuto && !NvidiaDriverPresent()) {
    return absl::UnavailableError("no NVIDIA driver on this machine (no /dev/nvidiactl)");
  }
  auto plugin = CudaPlugin();
  if (!plugin.ok()) return plugin.status();
  auto count = (*plugin)->device_count();
  if (!count.ok()) return count.status();
  CublasOptions options;
  options.precision = compute.precision;
  options.conv_workspace_bytes = static_cast<size_t>(compute.gpu_workspace_mib) << 20;
  options.cudnn = compute.cudnn_path;
  return (*plugin)->create_backend(gpu % *count, options);
}

}  // namespace

absl::StatusOr<BackendSelection> MakeComputeBackend(const ComputeConfig& compute, int gpu) {
  BackendSelection selection;
  if (compute.device != Device::kCpu) {
    auto cuda = MakeCuda(compute, gpu);
    if (cuda.ok()) {
      selection.backend = std::move(*cuda);
      return selection;
    }
    if (compute.device == Device::kCuda) {
      return absl::Status(cuda.status().code(),
                          absl::StrCat("compute.device is cuda: ", cuda.status().message()));
    }
    selection.note =
        absl::StrCat("compute.device auto: using the CPU (", cuda.status().message(), ")",
                     compute.precision == Precision::kFp32
                         ? ""
                         : absl::StrCat(", in fp32, not compute.precision ",
                                        kPrecisionNames.Name(compute.precision)));
  }
  selection.backend = std::make_unique<CpuBackend>(compute.threads);
  return selection;
}

absl::StatusOr<std::vector<std::string>> ListCudaDevices() {
  auto plugin = CudaPlugin();
  if (!plugin.ok()) return plugin.status();
  auto count = (*plugin)->device_count();
  if (!count.ok()) return count.status();
  std::vector<std::string> devices;
  for (int d = 0; d < *count; ++d) {
    auto backend = (*plugin)->create_backend(d, CublasOptions{});
    if (!backend.ok()) return backend.status();
    devices.push_back((*backend)->name());
  }
  return devices;
}

}  // namespace monsoon
