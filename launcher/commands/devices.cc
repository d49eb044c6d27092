// `monsoon devices`: the CUDA devices this process can use.
#include <iostream>

#include "launcher/commands/command.h"
#include "core/compute/compute_backends.h"

namespace monsoon {

void AddDevicesCommand(Command& program, int* exit_code) {
  Command cmd = program.Subcommand(
      "devices", "list the CUDA devices this machine can use (exit 1 and the reason when none)");
  cmd.OnRun([exit_code] {
    auto devices = ListCudaDevices();
    if (!devices.ok()) {
      std::cout << "cuda: none (" << devices.status().message() << ")" << std::endl;
      *exit_code = 1;
      return;
    }
    for (const std::string& d : *devices) std::cout << d << std::endl;
    *exit_code = 0;
  });
}

}  // namespace monsoon
