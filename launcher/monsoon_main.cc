// The `monsoon` command line: runs jobs and, as child processes, their roles. Each command
// lives in launcher/commands/; command_line.cc parses the command line and writes the help from
// the same declarations.
#include <glog/logging.h>

#include "core/compute/cpu/blas_kernels.h"
#include "core/process/process_setup.h"
#include "launcher/commands/command.h"

namespace monsoon {
namespace {

constexpr char kAbout[] =
    "Monsoon: parameter-server training (Downpour, sync, SSP, EASGD, EAMSGD) on one machine, "
    "under SLURM or mpirun. `monsoon COMMAND --help` describes a command.";

constexpr char kVersion[] = "monsoon 0.17";

int Main(int argc, char** argv) {
  RestartWith({HugePagesVariable(), BlasKernelsVariable()}, argv);
  // The role processes log through glog (a timestamp and a level on every line of their logs);
  // the launcher speaks to the user on plain stderr ("monsoon: ...").
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  const auto declare = [](Command& program, int* exit_code) {
    for (auto add :
         {AddRunCommand, AddValidateCommand, AddCompareCommand, AddSbatchCommand, AddLaunchCommand,
          AddPrepareCommand, AddSummarizeCommand, AddExportCommand, AddStatusCommand,
          AddDevicesCommand, AddHostsCommand, AddGenLinearCommand, AddRoleCommands}) {
      add(program, exit_code);
    }
  };
  const auto ready = [] {
    FlushDenormalsToZero();
    InstallStopSignals();
    ApplyProcessSettings();
  };
  return RunCommandLine(argc, argv, {"monsoon", kAbout, kVersion}, declare, ready);
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
