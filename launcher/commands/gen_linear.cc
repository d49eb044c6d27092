// `monsoon gen-linear --out FILE ...`: a synthetic linear-regression CSV.
#include <climits>
#include <memory>

#include "core/dataset.h"
#include "launcher/commands/command.h"

namespace monsoon {

void AddGenLinearCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string out;
    LinearDataSpec spec;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "gen-linear", "write a synthetic linear-regression CSV (y = M x + B + noise)");
  cmd->add_option("--out", o->out, "the CSV file to write")->required();
  cmd->add_option("--slope", o->spec.slope, "M")->capture_default_str();
  cmd->add_option("--intercept", o->spec.intercept, "B")->capture_default_str();
  cmd->add_option("--noise", o->spec.noise, "S, the noise's standard deviation")
      ->capture_default_str();
  cmd->add_option("--rows", o->spec.rows, "rows")
      ->check(CLI::Range(1, INT_MAX))
      ->capture_default_str();
  cmd->add_option("--seed", o->spec.seed, "the noise's seed")->capture_default_str();
  cmd->add_option("--x-min", o->spec.x_min, "the smallest x")->capture_default_str();
  cmd->add_option("--x-max", o->spec.x_max, "the largest x")->capture_default_str();
  cmd->callback([o, exit_code] {
    const absl::Status s = WriteCsvDataset(GenerateLinearDataset(o->spec), o->out);
    *exit_code = s.ok() ? 0 : Fail(s, 1);
  });
}

}  // namespace monsoon
