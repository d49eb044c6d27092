// `monsoon validate CONFIG.yaml [--set ...]`: checks a config and prints it resolved.
#include <iostream>
#include <memory>

#include "launcher/commands/command.h"

namespace monsoon {

void AddValidateCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string config;
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "check a config and print it fully resolved (every default filled in)");
  CLI::Option* config = cmd->add_option("CONFIG.yaml", o->config, "the job")->required();
  AddSetOption(cmd, &o->sets, config);
  cmd->callback([o, exit_code] {
    auto loaded = LoadUserConfig(o->config, o->sets);
    if (!loaded.ok()) {
      *exit_code = Fail(loaded.status(), 2);
      return;
    }
    std::cout << JobConfigToYaml(*loaded);
    *exit_code = 0;
  });
}

}  // namespace monsoon
