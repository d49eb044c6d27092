// `monsoon compare STUDY.yaml [--out DIR]`: every variant of a study in turn, then the table
// and the plot (README "Comparing algorithms").
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/config/config_validation.h"
#include "core/exit_status.h"
#include "core/job/job_data.h"
#include "core/model/model.h"
#include "core/process/process_setup.h"
#include "core/status_macros.h"
#include "launcher/commands/command.h"
#include "launcher/local/job_setup.h"
#include "launcher/local/summary.h"
#include "launcher/simulation/cost_estimate.h"
#include "launcher/study/study.h"
#include "launcher/study/study_report.h"
#include "launcher/study/study_results.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

// One run of a study: variant `variant`, with the `seed`-th of `seeds` seeds (the job's seed
// plus `seed`).
struct StudyRun {
  size_t variant = 0;
  int seed = 0;
  int seeds = 1;
  // Its directory: out/NAME, or out/NAME/seed-S with several seeds.
  std::string Dir(const Study& study, const std::string& out) const {
    const StudyVariant& v = study.variants[variant];
    return seeds == 1 ? absl::StrCat(out, "/", v.name)
                      : absl::StrCat(out, "/", v.name, "/seed-", v.config.seed + seed);
  }
};

// Runs `run` into its directory; its result, or a failed one saying why. `place`: "[3/8]";
// `left`: how much of the study remains with it, for its first line.
absl::StatusOr<VariantResult> RunVariant(const Study& study, const StudyRun& run,
                                         const std::string& out, const std::string& place,
                                         const std::string& left) {
  const StudyVariant& v = study.variants[run.variant];
  for (const std::string& w : JobConfigWarnings(v.config)) {
    std::cerr << "monsoon: warning: variant '" << v.name << "': " << w << std::endl;
  }
  JobConfig config = v.config;
  config.seed += run.seed;
  std::cerr << "monsoon: " << place << " " << v.name << ": "
            << kAlgorithmNames.Name(v.config.training.algorithm) << ", " << VariantLabel(v)
            << (run.seeds > 1 ? absl::StrCat(", seed ", config.seed) : "") << left << std::endl;
  const RunDir run_dir{run.Dir(study, out)};
  MONSOON_ASSIGN_OR_RETURN(const std::unique_ptr<RunDirLock> lock,
                           PrepareRunDir(&config, run_dir, HostRoles::kAll));
  LocalJobOptions options;
  options.self_exe = SelfExePath();
  options.progress.label = absl::StrCat(place, " ", v.name, " ");
  MONSOON_RETURN_IF_ERROR(RunPreparedJob(config, run_dir, options).status());
  MONSOON_ASSIGN_OR_RETURN(VariantResult result,
                           ReadVariantResult(v, run_dir, study.target_accuracy));
  result.seed = config.seed;
  return result;
}

// A variant that failed: its first line of error (the rest, a log excerpt, is in its run
// directory) and no figures.
VariantResult FailedVariant(const Study& study, const StudyRun& run, const absl::Status& status,
                            const std::string& out) {
  const StudyVariant& v = study.variants[run.variant];
  VariantResult failure;
  failure.name = v.name;
  failure.seed = v.config.seed + run.seed;
  failure.algorithm = kAlgorithmNames.Name(v.config.training.algorithm);
  failure.knobs = VariantLabel(v);
  const absl::string_view message = status.message();
  const size_t line_end = message.find('\n');
  failure.status = std::string(message.substr(0, line_end));
  if (line_end != absl::string_view::npos) {
    absl::StrAppend(&failure.status, " (see ", run.Dir(study, out), "/logs)");
  }
  return failure;
}

// How long the study's runs take on this machine, estimated (EstimateCost) from one step of
// each variant's model measured here and the first variant's data. A variant whose model is
// not Monsoon's (a worker program's) or whose roles do not fit this host counts nothing; they
// are counted in *unestimated.
absl::StatusOr<double> EstimateStudySeconds(const Study& study, int seeds, int* unestimated) {
  MONSOON_ASSIGN_OR_RETURN(const DataSizes data, CheckData(study.variants.front().config));
  std::map<std::string, absl::StatusOr<double>> step_of;  // by model and batch size
  double seconds = 0;
  for (const StudyVariant& v : study.variants) {
    const bool fits =
        CheckRolesFit(EstimateMemory(v.config, data), HostRoles::kAll, HostMemoryLimit()).ok();
    const std::string key =
        absl::StrCat(Model::Summary(v.config.model), "/", v.config.training.batch_size);
    if (fits && v.config.cluster.worker_program.empty() && step_of.count(key) == 0) {
      step_of.emplace(key, MeasureStepSeconds(v.config));
    }
    const auto step = step_of.find(key);
    if (!fits || step == step_of.end() || !step->second.ok()) {
      *unestimated += seeds;
      continue;
    }
    seconds += EstimateCost(v.config, data, *step->second).real_seconds;
  }
  return seconds * seeds;
}

// Prints the study's plan: its runs and their estimated time. FailedPrecondition when that is
// over an hour and `yes` was not given.
absl::Status PlanStudy(const Study& study, int seeds, bool yes) {
  int unestimated = 0;
  MONSOON_ASSIGN_OR_RETURN(const double seconds, EstimateStudySeconds(study, seeds, &unestimated));
  std::cerr << "monsoon: study '" << study.name << "': " << study.variants.size()
            << " variants x " << seeds << " seed(s) = " << study.variants.size() * seeds
            << " runs, about " << DurationText(seconds) << " on this machine (estimated"
            << (unestimated > 0 ? absl::StrCat("; ", unestimated,
                                               " runs of worker programs, or too large for this "
                                               "host, not counted")
                                : "")
            << ")" << std::endl;
  return ConfirmLongRun(seconds, yes, "study", "fewer variants, seeds or epochs");
}

int Compare(const std::string& study_path, const std::vector<std::string>& sets, std::string out,
            int seeds, bool yes) {
  auto study = LoadStudy(study_path, sets);
  if (!study.ok()) return Fail(study.status(), 2);
  const absl::Status planned = PlanStudy(*study, seeds, yes);
  if (!planned.ok()) return Fail(planned, 2);
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
  // Every variant with the first seed, then every variant with the next, and so on: a study
  // stopped early has whole rounds.
  std::vector<StudyRun> runs;
  for (int seed = 0; seed < seeds; ++seed) {
    for (size_t i = 0; i < study->variants.size(); ++i) runs.push_back({i, seed, seeds});
  }
  const size_t n = runs.size();
  for (size_t i = 0; i < n; ++i) {
    const StudyVariant& v = study->variants[runs[i].variant];
    // At the pace of the runs so far.
    const double so_far = absl::ToDoubleSeconds(absl::Now() - start);
    const std::string left = i == 0 ? ""
                                    : absl::StrCat(" (", n - i, " of ", n, " left, about ",
                                                   DurationText(so_far / i * (n - i)), ")");
    const std::string place = absl::StrCat("[", i + 1, "/", n, "]");
    absl::StatusOr<VariantResult> result = RunVariant(*study, runs[i], out, place, left);
    if (absl::IsAlreadyExists(result.status())) return Fail(result.status(), 2);
    if (absl::IsCancelled(result.status())) return Fail(result.status(), kExitStopped);
    if (IsDiverged(result.status())) {
      VariantResult diverged = ReadDivergedResult(v, RunDir{runs[i].Dir(*study, out)});
      diverged.seed = v.config.seed + runs[i].seed;
      std::cerr << "monsoon: " << v.name << ": " << diverged.status << " ("
                << result.status().message().substr(0, result.status().message().find('\n'))
                << ")" << std::endl;
      results.push_back(std::move(diverged));
      continue;
    }
    if (!result.ok()) {
      std::cerr << "monsoon: variant '" << v.name << "' failed: " << result.status().message()
                << std::endl;
      ++failed;
      results.push_back(FailedVariant(*study, runs[i], result.status(), out));
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
  const size_t diverged =
      std::count_if(results.begin(), results.end(), [](const VariantResult& r) {
        return r.diverged;
      });
  std::cerr << "monsoon: compared " << study->variants.size() << " variants"
            << (seeds > 1 ? absl::StrCat(" with ", seeds, " seeds each") : "") << " (" << failed
            << " of " << n << " runs failed, " << diverged << " diverged): " << out
            << "/compare.{csv,md,svg}" << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace

void AddCompareCommand(Command& program, int* exit_code) {
  struct Options {
    std::string study, out;
    std::vector<std::string> sets;
    int seeds = 1;
    bool yes = false;
  };
  auto o = std::make_shared<Options>();
  Command cmd = program.Subcommand(
      "compare",
      "run each variant of a study (one base job, several algorithms or knobs) in turn, then "
      "write DIR/compare.csv, compare.md and compare.svg");
  CommandOption study = cmd.Option("STUDY.yaml", &o->study, "the study").Required();
  AddSetOption(cmd, &o->sets, study)
      .Help(
          "override a config field in every variant, after the study's own settings, e.g. "
          "training.max_steps=20 for a quick trial (YAML value; repeats)");
  cmd.Option("--out", &o->out, "the study's directory (default runs/STUDY/TIMESTAMP)");
  cmd.Option("--seeds", &o->seeds,
             "run each variant N times, with the job's seed, seed + 1, ...; compare.md "
             "adds each figure's median and range over them")
      .InRange(1, 100);
  cmd.Flag("--yes", &o->yes,
           "run a study estimated to take more than an hour (without it, such a study "
           "stops after printing its plan)");
  cmd.OnRun([o, exit_code] { *exit_code = Compare(o->study, o->sets, o->out, o->seeds, o->yes); });
}

}  // namespace monsoon
