// `monsoon export --run-dir DIR [--format npz] [--output FILE]`: the final weights as named
// arrays in the model's shapes.
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/data/array_files.h"
#include "core/file_util.h"
#include "core/model/model.h"
#include "launcher/commands/command.h"

namespace monsoon {
namespace {

struct ExportOptions {
  RunDirArg run_dir;
  std::string format = "npz";
  std::string output;  // default RUN_DIR/params.npz
};

// RUN_DIR/params.bin, checked against the model's size.
absl::StatusOr<std::vector<float>> FinalWeights(const PreparedRun& run) {
  const std::string path = run.run_dir.params_path();
  absl::StatusOr<std::vector<float>> weights =
      ReadFloatFile(path, Model::NumParams(run.config.model));
  if (absl::IsNotFound(weights.status())) {
    return absl::NotFoundError(absl::StrCat(
        "no final weights in ", run.run_dir.root, " (", path,
        "): the job has not finished; "
        "after a SLURM job whose summarize step did not run, run `monsoon summarize --run-dir ",
        run.run_dir.root, "` first"));
  }
  return weights;
}

int Export(const ExportOptions& o) {
  auto run = o.run_dir.Open("export");
  if (!run.ok()) return Fail(run.status(), 2);
  auto weights = FinalWeights(*run);
  if (!weights.ok()) return Fail(weights.status(), 1);
  std::vector<NamedArray> arrays;
  for (const ParamTensor& t : Model::Layout(run->config.model)) {
    arrays.push_back({t.shape.name, t.shape.dims,
                      absl::MakeConstSpan(weights->data() + t.offset, t.shape.size())});
  }
  const std::string path = o.output.empty() ? run->run_dir.root + "/params.npz" : o.output;
  const absl::Status written = WriteNpz(path, arrays);
  if (!written.ok()) return Fail(written, 1);
  std::cout << "monsoon: wrote " << path << " (" << arrays.size() << " arrays, " << weights->size()
            << " parameters)" << std::endl;
  return 0;
}

}  // namespace

void AddExportCommand(Command& program, int* exit_code) {
  auto o = std::make_shared<ExportOptions>();
  Command cmd = program.Subcommand(
      "export",
      "write a finished run's final weights as named arrays in the model's shapes: an .npz "
      "archive for NumPy (numpy.load) and PyTorch");
  o->run_dir.AddTo(cmd);
  cmd.Option("--format", &o->format, "the file format").OneOf({"npz"});
  cmd.Option("--output", &o->output, "where to write it (default RUN_DIR/params.npz)");
  cmd.OnRun([o, exit_code] { *exit_code = Export(*o); });
}

}  // namespace monsoon
