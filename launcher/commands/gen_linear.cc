// `monsoon gen-linear --out FILE ...`: a synthetic linear-regression CSV.
#include <memory>

#include "core/data/dataset.h"
#include "launcher/commands/command.h"

namespace monsoon {
namespace {

// The most rows gen-linear writes (about 0.5 GB of CSV).
constexpr int kMaxRows = 20'000'000;

}  // namespace

void AddGenLinearCommand(Command& program, int* exit_code) {
  struct Options {
    std::string out;
    LinearDataSpec spec;
  };
  auto o = std::make_shared<Options>();
  Command cmd = program.Subcommand("gen-linear",
                                   "write a synthetic linear-regression CSV (y = M x + B + noise)");
  cmd.Option("--out", &o->out, "the CSV file to write").Required();
  cmd.Option("--slope", &o->spec.slope, "M").Finite().ShowDefault();
  cmd.Option("--intercept", &o->spec.intercept, "B").Finite().ShowDefault();
  cmd.Option("--noise", &o->spec.noise, "S, the noise's standard deviation (>= 0)")
      .Finite(/*at_least_zero=*/true)
      .ShowDefault();
  cmd.Option("--rows", &o->spec.rows, "rows").InRange(1, kMaxRows).ShowDefault();
  cmd.Option("--seed", &o->spec.seed, "the noise's seed").ShowDefault();
  cmd.Option("--x-min", &o->spec.x_min, "the smallest x").Finite().ShowDefault();
  cmd.Option("--x-max", &o->spec.x_max, "the largest x").Finite().ShowDefault();
  cmd.OnRun([o, exit_code] {
    const absl::Status s = WriteCsvDataset(GenerateLinearDataset(o->spec), o->out);
    *exit_code = s.ok() ? 0 : Fail(s, 1);
  });
}

}  // namespace monsoon
