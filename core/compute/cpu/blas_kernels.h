// Which of OpenBLAS's kernel families the CPU backend's GEMMs run on. OpenBLAS picks them when
// it loads, from the CPU's model; a build that does not know the model (Debian 12's 0.3.21 on
// an Intel Xeon of family 6, model 207, for one) falls back to its SSE3 kernels ("Prescott"), 4-6x
// slower on an AVX-512 CPU. OPENBLAS_CORETYPE overrides the pick, and is read only at load.
#ifndef MONSOON_CORE_COMPUTE_CPU_BLAS_KERNELS_H_
#define MONSOON_CORE_COMPUTE_CPU_BLAS_KERNELS_H_

#include <optional>
#include <string>

#include "core/process/process_setup.h"

namespace monsoon {

// The kernel family OpenBLAS runs in this process ("SkylakeX", "Haswell", "Prescott", ...).
std::string BlasKernels();

// OPENBLAS_CORETYPE to start with when the kernels OpenBLAS picked here use no AVX2 while this
// CPU has it: "SkylakeX" on a CPU with AVX-512 (F, CD, BW, DQ, VL), else "Haswell" on one with
// AVX2 and FMA. None when OpenBLAS's pick fits, on an older CPU, or when OPENBLAS_CORETYPE is
// already set (the user's choice stands).
std::optional<StartupVariable> BlasKernelsVariable();

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CPU_BLAS_KERNELS_H_
