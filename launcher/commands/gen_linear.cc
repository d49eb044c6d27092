// `monsoon gen-linear --out FILE ...`: a synthetic linear-regression CSV.
#include <cmath>
#include <memory>

#include "absl/strings/numbers.h"
#include "core/data/dataset.h"
#include "launcher/commands/command.h"

namespace monsoon {
namespace {

// The most rows gen-linear writes (about 0.5 GB of CSV).
constexpr int kMaxRows = 20'000'000;

}  // namespace

void AddGenLinearCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string out;
    LinearDataSpec spec;
  };
  auto o = std::make_shared<Options>();
  // A number that is neither NaN nor infinite (and, for `at_least_zero`, not negative).
  const auto finite_number = [](bool at_least_zero) {
    return CLI::Validator(
        [at_least_zero](std::string& text) {
          double v = 0;
          if (absl::SimpleAtod(text, &v) && std::isfinite(v) && (!at_least_zero || v >= 0)) {
            return std::string();
          }
          return std::string(at_least_zero ? "expected a finite number >= 0"
                                           : "expected a finite number");
        },
        at_least_zero ? "FINITE >= 0" : "FINITE");
  };
  const CLI::Validator finite = finite_number(false);
  CLI::App* cmd = app.add_subcommand(
      "gen-linear", "write a synthetic linear-regression CSV (y = M x + B + noise)");
  cmd->add_option("--out", o->out, "the CSV file to write")->required();
  cmd->add_option("--slope", o->spec.slope, "M")->check(finite)->capture_default_str();
  cmd->add_option("--intercept", o->spec.intercept, "B")->check(finite)->capture_default_str();
  cmd->add_option("--noise", o->spec.noise, "S, the noise's standard deviation (>= 0)")
      ->check(finite_number(true))
      ->capture_default_str();
  cmd->add_option("--rows", o->spec.rows, "rows")
      ->check(CLI::Range(1, kMaxRows))
      ->capture_default_str();
  cmd->add_option("--seed", o->spec.seed, "the noise's seed")->capture_default_str();
  cmd->add_option("--x-min", o->spec.x_min, "the smallest x")->check(finite)->capture_default_str();
  cmd->add_option("--x-max", o->spec.x_max, "the largest x")->check(finite)->capture_default_str();
  cmd->callback([o, exit_code] {
    const absl::Status s = WriteCsvDataset(GenerateLinearDataset(o->spec), o->out);
    *exit_code = s.ok() ? 0 : Fail(s, 1);
  });
}

}  // namespace monsoon
