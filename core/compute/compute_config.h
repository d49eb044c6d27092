// A job's `compute:` section: which backend a worker computes on, and its settings.
#ifndef MONSOON_CORE_COMPUTE_COMPUTE_CONFIG_H_
#define MONSOON_CORE_COMPUTE_COMPUTE_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/enum_names.h"

namespace monsoon {

// The compute backend (core/compute/compute_backends.h).
enum class Device { kAuto, kCpu, kCuda };
inline constexpr NamedValue<Device> kDeviceValues[] = {
    {Device::kAuto, "auto"}, {Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}};
inline constexpr EnumNames<Device> kDeviceNames{"device", kDeviceValues};

// The arithmetic of the CUDA backend's matrix products (cuBLAS's compute type): fp32; tf32 or
// bf16 tensor cores, whose products round their fp32 operands to 10 or 7 mantissa bits and sum
// in fp32. Weights, gradients and every other kernel stay fp32, and so do the servers.
enum class Precision { kFp32, kTf32, kBf16 };
inline constexpr NamedValue<Precision> kPrecisionValues[] = {
    {Precision::kFp32, "fp32"}, {Precision::kTf32, "tf32"}, {Precision::kBf16, "bf16"}};
inline constexpr EnumNames<Precision> kPrecisionNames{"precision", kPrecisionValues};

// Where the CUDA backend finds cuDNN (compute.cudnn_path): searched for (`auto`), never
// (`off`), or the library or its directory at an absolute `path`.
struct CudnnLibrary {
  enum class Where { kAuto, kOff, kPath };
  Where where = Where::kAuto;
  std::string path;  // kPath only

  // As compute.cudnn_path writes it: "auto", "off" or the path.
  std::string Text() const {
    return where == Where::kAuto ? "auto" : where == Where::kOff ? "off" : path;
  }
  // From compute.cudnn_path's text; InvalidArgument for anything else.
  static absl::StatusOr<CudnnLibrary> Parse(const std::string& text) {
    if (text == "auto") return CudnnLibrary{};
    if (text == "off") return CudnnLibrary{Where::kOff, ""};
    if (absl::StartsWith(text, "/")) return CudnnLibrary{Where::kPath, text};
    return absl::InvalidArgumentError(
        absl::StrCat("'", text,
                     "' is neither auto, off nor an absolute path (of libcudnn.so.9 or its "
                     "directory)"));
  }
};

struct ComputeConfig {
  Device device = Device::kAuto;
  int threads = 1;                          // BLAS threads per worker (CPU backend)
  Precision precision = Precision::kFp32;   // matrix products (CUDA backend)
  int gpu_workspace_mib = 256;              // the CUDA backend's convolution workspace bound
  int gpu_data_mib = 4096;  // the most GPU memory a worker's shard may take (Model::HoldRows)
  CudnnLibrary cudnn_path;  // where the CUDA backend finds cuDNN (CublasOptions)
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_COMPUTE_CONFIG_H_
