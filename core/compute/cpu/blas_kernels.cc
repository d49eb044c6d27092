#include "core/compute/cpu/blas_kernels.h"

#include <cblas.h>

#include <cstdlib>

#include "absl/strings/ascii.h"

namespace monsoon {
namespace {

// OpenBLAS's kernel families built on AVX2 or AVX-512, by openblas_get_corename()'s names.
bool UsesAvx2(const std::string& kernels) {
  const std::string name = absl::AsciiStrToLower(kernels);
  for (const char* family :
       {"haswell", "zen", "excavator", "skylakex", "cooperlake", "sapphirerapids"}) {
    if (name == family) return true;
  }
  return false;
}

}  // namespace

std::string BlasKernels() { return openblas_get_corename(); }

std::optional<StartupVariable> BlasKernelsVariable() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || UsesAvx2(BlasKernels())) return std::nullopt;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    return StartupVariable{"OPENBLAS_CORETYPE", "SkylakeX"};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return StartupVariable{"OPENBLAS_CORETYPE", "Haswell"};
  }
  return std::nullopt;
}

}  // namespace monsoon
