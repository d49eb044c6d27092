// `monsoon validate CONFIG.yaml [--set ...]`: checks a config and prints it resolved.
#include <iostream>
#include <memory>

#include "absl/strings/str_split.h"
#include "core/data/dataset.h"
#include "core/model/model.h"
#include "launcher/commands/command.h"
#include "worker/worker_role.h"

namespace monsoon {

void AddValidateCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string config;
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "check a config, and its data against its model, and print it fully resolved (every "
      "default filled in)");
  CLI::Option* config = cmd->add_option("CONFIG.yaml", o->config, "the job")->required();
  AddSetOption(cmd, &o->sets, config);
  cmd->callback([o, exit_code] {
    auto loaded = LoadUserConfig(o->config, o->sets);
    if (!loaded.ok()) {
      *exit_code = Fail(loaded.status(), 2);
      return;
    }
    // The data against the model, as every worker and the evaluator will read it.
    const absl::Status data = CheckData(*loaded);
    if (!data.ok()) {
      *exit_code = Fail(data, 2);
      return;
    }
    std::cout << JobConfigToYaml(*loaded) << "#\n# The model:\n";
    for (const absl::string_view line : absl::StrSplit(Model::Summary(loaded->model), '\n')) {
      if (!line.empty()) std::cout << "#   " << line << "\n";
    }
    *exit_code = 0;
  });
}

}  // namespace monsoon
