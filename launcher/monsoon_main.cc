// The `monsoon` command line: runs jobs and, as child processes, their roles. Each command
// lives in launcher/commands/; CLI11 parses the command line and writes the help from the same
// declarations.
#include <glog/logging.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "core/process/process_setup.h"
#include "launcher/commands/command.h"

namespace monsoon {
namespace {

constexpr char kAbout[] =
    "Monsoon: parameter-server training (Downpour, sync, SSP, EASGD, EAMSGD) on one machine, "
    "under SLURM or mpirun. `monsoon COMMAND --help` describes a command.";

constexpr char kVersion[] = "monsoon 0.17";

// A bad command line is exit status 2 with one line; asking for help or the version is 0.
int ExitForParseError(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  std::cerr << "monsoon: " << e.what() << " (see monsoon"
            << (chosen.empty() ? "" : " " + chosen.front()->get_name()) << " --help)" << std::endl;
  return 2;
}

int Main(int argc, char** argv) {
  // The role processes log through glog (a timestamp and a level on every line of their logs);
  // the launcher speaks to the user on plain stderr ("monsoon: ...").
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  CLI::App app{kAbout, "monsoon"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);
  int exit_code = 0;
  for (auto add :
       {AddRunCommand, AddValidateCommand, AddCompareCommand, AddSbatchCommand, AddLaunchCommand,
        AddPrepareCommand, AddSummarizeCommand, AddExportCommand, AddStatusCommand,
        AddDevicesCommand, AddHostsCommand, AddGenLinearCommand, AddRoleCommands}) {
    add(app, &exit_code);
  }
  if (argc < 2) {
    std::cout << app.help();
    return 2;
  }
  const std::string first = argv[1];
  const auto named = [&](CLI::App* command) { return command->check_name(first); };
  if (first[0] != '-' && app.get_subcommands(named).empty()) {
    std::cerr << "monsoon: unknown command '" << first << "' (see monsoon --help)" << std::endl;
    return 2;
  }
  InstallStopSignals();
  ApplyProcessSettings();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  return exit_code;
}

}  // namespace
}  // namespace monsoon

int main(int argc, char** argv) { return monsoon::Main(argc, argv); }
