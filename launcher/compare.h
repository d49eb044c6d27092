// `monsoon compare STUDY.yaml`: runs several variants of one base job in turn (same data,
// model and seed; each variant overrides some fields), then writes compare.csv, compare.md
// and compare.svg (test accuracy, or test loss for regression jobs, against wall time, against
// epochs and against the bytes the workers sent, one line per variant).
//
// A study file:
//   study: compare_fmnist           # names the default output directory
//   base: fmnist_downpour.yaml      # the base job, relative to the study file
//   target_accuracy: 0.84           # for the time-to-target column (optional)
//   set: {training.epochs: 6}       # overrides for every variant (optional)
//   variants:
//     - name: sync
//       set: {training.algorithm: sync}
//     - ...
#ifndef MONSOON_LAUNCHER_COMPARE_H_
#define MONSOON_LAUNCHER_COMPARE_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job_config.h"
#include "core/run_dir.h"

namespace monsoon {

struct StudyVariant {
  std::string name;
  std::vector<std::string> sets;  // "key.path=value", after the study's common ones
  JobConfig config;               // the base job with both applied
};

struct Study {
  std::string name = "study";  // names runs/STUDY (CheckRunName)
  double target_accuracy = 0;  // 0: no target
  // Every variant classifies (the plot shows test accuracy) or every variant regresses (the
  // plot shows test loss).
  bool classification = true;
  std::vector<StudyVariant> variants;
};

// Reads and validates a study: every variant's config must load. InvalidArgument names the
// field (`variants[2].set: ...`) or the variant whose config is bad.
absl::StatusOr<Study> LoadStudy(const std::string& path);

// What compare.csv reports for one variant.
struct VariantResult {
  std::string name;
  std::string algorithm;
  std::string knobs;  // the settings that define the variant, e.g. "tau=4 alpha=0.45 eta=0.05"
  std::string status = "ok";  // or the error that ended the variant's job
  double final_accuracy = 0;  // classification only
  double best_accuracy = 0;
  double final_loss = 0;
  double best_loss = 0;        // the lowest
  double time_to_target = -1;  // seconds; < 0 when the target was never reached
  double samples_per_second = 0;
  double bytes_sent = 0;  // by all workers
  double mean_staleness = 0;
  double comm_share = 0;  // of a worker's training time spent in pulls, pushes, exchanges
  double wall_seconds = 0;
  // The evaluator's curves: wall seconds, epochs, test accuracy and loss per evaluation, and
  // the bytes all workers had sent by then (each worker's last metrics row at or before the
  // evaluation's wall_seconds; each role's clock starts with the job).
  std::vector<double> curve_seconds, curve_epochs, curve_accuracy, curve_loss, curve_bytes;
};

// The settings that distinguish a variant, e.g. "tau=4 alpha=0.45 eta=0.05 workers=2".
std::string VariantKnobs(const JobConfig& config);

// The figures of one finished variant, read from its run directory.
absl::StatusOr<VariantResult> ReadVariantResult(const StudyVariant& variant, const RunDir& run_dir,
                                                double target_accuracy);

// Writes out_dir/compare.csv, compare.md and compare.svg.
absl::Status WriteComparison(const Study& study, const std::vector<VariantResult>& results,
                             const std::string& out_dir);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_COMPARE_H_
