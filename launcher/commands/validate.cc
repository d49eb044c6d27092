// `monsoon validate CONFIG.yaml [--set ...]`: checks a config and prints it resolved.
#include <iostream>
#include <memory>

#include "absl/strings/str_split.h"
#include "core/config/config_writer.h"
#include "core/data/dataset.h"
#include "core/job/job_data.h"
#include "core/model/model.h"
#include "core/process/process_setup.h"
#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"
#include "launcher/simulation/cost_estimate.h"
#include "server/server_role.h"
#include "worker/worker_role.h"

namespace monsoon {

namespace {

// `text`'s lines after "#   ", as comments of the YAML printed before them.
void PrintCommented(const std::string& text) {
  for (const absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!line.empty()) std::cout << "#   " << line << "\n";
  }
}

}  // namespace

void AddValidateCommand(Command& program, int* exit_code) {
  struct Options {
    std::string config;
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Options>();
  Command cmd = program.Subcommand(
      "validate",
      "check a config, and its data against its model, and print it fully resolved (every "
      "default filled in)");
  CommandOption config = cmd.Option("CONFIG.yaml", &o->config, "the job").Required();
  AddSetOption(cmd, &o->sets, config);
  cmd.OnRun([o, exit_code] {
    auto loaded = LoadUserConfig(o->config, o->sets);
    if (!loaded.ok()) {
      *exit_code = Fail(loaded.status(), 2);
      return;
    }
    // The data against the model, as every worker and the evaluator will read it.
    const absl::StatusOr<DataSizes> data = CheckData(*loaded);
    if (!data.ok()) {
      *exit_code = Fail(data.status(), 2);
      return;
    }
    std::cout << JobConfigToYaml(*loaded) << "#\n# The model:\n";
    PrintCommented(Model::Summary(loaded->model));
    const MemoryEstimate memory = EstimateMemory(*loaded, *data);
    const MemoryLimit limit = HostMemoryLimit();
    std::cout << "#\n# Memory each role needs (estimated):\n";
    PrintCommented(MemoryTable(memory, limit));
    // As `monsoon run` would start them: every role on this host.
    absl::Status fits = CheckRolesFit(memory, HostRoles::kAll, limit);
    if (fits.ok()) fits = CheckConnectionsFit(*loaded);
    if (!fits.ok()) {
      *exit_code = Fail(fits, 2);
      return;
    }
    const absl::StatusOr<double> step = MeasureStepSeconds(*loaded);
    if (step.ok()) {
      std::cout << "#\n# Cost (estimated from one step measured here):\n";
      PrintCommented(CostText(EstimateCost(*loaded, *data, *step)));
    }
    *exit_code = 0;
  });
}

}  // namespace monsoon
