// `monsoon compare STUDY.yaml [--out DIR]`: every variant of a study in turn, then the table
// and the plot (README "Comparing algorithms").
#include <filesystem>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/process_setup.h"
#include "core/status_macros.h"
#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"
#include "launcher/study/study.h"
#include "launcher/study/study_report.h"
#include "launcher/study/study_results.h"
#include "launcher/local/summary.h"

namespace monsoon {
namespace {

// Runs variant i of n into out/NAME; its result, or a failed one saying why. `left`: how much
// of the study remains with it, for its first line.
absl::StatusOr<VariantResult> RunVariant(const Study& study, size_t i, const std::string& out,
                                         const std::string& left) {
  const StudyVariant& v = study.variants[i];
  for (const std::string& w : JobConfigWarnings(v.config)) {
    std::cerr << "monsoon: warning: variant '" << v.name << "': " << w << std::endl;
  }
  const std::string place = absl::StrCat("[", i + 1, "/", study.variants.size(), "]");
  std::cerr << "monsoon: " << place << " " << v.name << ": "
            << kAlgorithmNames.Name(v.config.training.algorithm) << ", " << VariantLabel(v) << left
            << std::endl;
  const RunDir run_dir{absl::StrCat(out, "/", v.name)};
  JobConfig config = v.config;
  MONSOON_ASSIGN_OR_RETURN(const std::unique_ptr<RunDirLock> lock,
                           PrepareRunDir(&config, run_dir, HostRoles::kAll));
  LocalJobOptions options;
  options.self_exe = SelfExePath();
  options.progress_label = absl::StrCat(place, " ", v.name, " ");
  MONSOON_RETURN_IF_ERROR(RunLocalJob(config, run_dir, options, StopFlag()).status());
  return ReadVariantResult(v, run_dir, study.target_accuracy);
}

// A variant that failed: its first line of error (the rest, a log excerpt, is in its run
// directory) and no figures.
VariantResult FailedVariant(const StudyVariant& v, const absl::Status& status,
                            const std::string& out) {
  VariantResult failure;
  failure.name = v.name;
  failure.algorithm = kAlgorithmNames.Name(v.config.training.algorithm);
  failure.knobs = VariantLabel(v);
  const absl::string_view message = status.message();
  const size_t line_end = message.find('\n');
  failure.status = std::string(message.substr(0, line_end));
  if (line_end != absl::string_view::npos) {
    absl::StrAppend(&failure.status, " (see ", out, "/", v.name, "/logs)");
  }
  return failure;
}

int Compare(const std::string& study_path, std::string out) {
  auto study = LoadStudy(study_path);
  if (!study.ok()) return Fail(study.status(), 2);
  if (out.empty()) {
    absl::StatusOr<std::string> dir = NewDefaultDir(study->name);
    if (!dir.ok()) return Fail(dir.status(), 1);
    out = *dir;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return Fail(absl::PermissionDeniedError(absl::StrCat("cannot create ", out)), 1);
  std::vector<VariantResult> results;
  int failed = 0;
  const absl::Time start = absl::Now();
  const size_t n = study->variants.size();
  for (size_t i = 0; i < n; ++i) {
    const StudyVariant& v = study->variants[i];
    // At the pace of the variants so far.
    const double so_far = absl::ToDoubleSeconds(absl::Now() - start);
    const std::string left = i == 0 ? ""
                                    : absl::StrCat(" (", n - i, " of ", n, " left, about ",
                                                   DurationText(so_far / i * (n - i)), ")");
    absl::StatusOr<VariantResult> result = RunVariant(*study, i, out, left);
    if (absl::IsAlreadyExists(result.status())) return Fail(result.status(), 2);
    if (absl::IsCancelled(result.status())) return Fail(result.status(), kExitStopped);
    if (!result.ok()) {
      std::cerr << "monsoon: variant '" << v.name << "' failed: " << result.status().message()
                << std::endl;
      ++failed;
      results.push_back(FailedVariant(v, result.status(), out));
      continue;
    }
    std::cerr << "monsoon: " << v.name << ": final test "
              << (study->classification ? "accuracy " : "loss ")
              << (study->classification ? result->final_accuracy : result->final_loss) << " after "
              << result->wall_seconds << " s" << std::endl;
    results.push_back(*std::move(result));
  }
  const absl::Status written = WriteComparison(*study, results, out);
  if (!written.ok()) return Fail(written, 1);
  std::cerr << "monsoon: compared " << study->variants.size() << " variants (" << failed
            << " failed): " << out << "/compare.{csv,md,svg}" << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace

void AddCompareCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string study, out;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "run each variant of a study (one base job, several algorithms or knobs) in turn, then "
      "write DIR/compare.csv, compare.md and compare.svg");
  cmd->add_option("STUDY.yaml", o->study, "the study")->required();
  cmd->add_option("--out", o->out, "the study's directory (default runs/STUDY/TIMESTAMP)");
  cmd->callback([o, exit_code] { *exit_code = Compare(o->study, o->out); });
}

}  // namespace monsoon
