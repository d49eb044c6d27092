// `monsoon devices`: the CUDA devices this process can use, and the CPU's BLAS kernels.
#include <iostream>

#include "core/compute/compute_backends.h"
#include "core/compute/cpu/blas_kernels.h"
#include "launcher/commands/command.h"

namespace monsoon {

void AddDevicesCommand(Command& program, int* exit_code) {
  Command cmd = program.Subcommand(
      "devices",
      "list the CUDA devices this machine can use (exit 1 and the reason when none), then the "
      "CPU's BLAS kernels");
  cmd.OnRun([exit_code] {
    auto devices = ListCudaDevices();
    if (devices.ok()) {
      for (const std::string& d : *devices) std::cout << d << std::endl;
    } else {
      std::cout << "cuda: none (" << devices.status().message() << ")" << std::endl;
    }
    std::cout << "cpu: OpenBLAS " << BlasKernels() << " kernels" << std::endl;
    *exit_code = devices.ok() ? 0 : 1;
  });
}

}  // namespace monsoon
