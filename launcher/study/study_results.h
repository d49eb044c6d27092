// The figures of one finished variant of a study, read from its run directory's metrics.
#ifndef MONSOON_LAUNCHER_STUDY_STUDY_RESULTS_H_
#define MONSOON_LAUNCHER_STUDY_STUDY_RESULTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/run/run_dir.h"
#include "launcher/study/study.h"

namespace monsoon {

// What compare.csv reports for one variant.
struct VariantResult {
  std::string name;
  std::string algorithm;
  std::string knobs;  // the settings that define the variant, e.g. "tau=4 alpha=0.45 eta=0.05"
  uint64_t seed = 0;  // the run's job seed (compare --seeds runs each variant with several)
  std::string status = "ok";  // or the error that ended the variant's job, on one line
  bool failed() const { return status != "ok"; }  // then it has no figures
  // Its training diverged (status "diverged at step N ..."): a result, not a failure of the
  // study; its curves run until then.
  bool diverged = false;
  double final_accuracy = 0;                      // classification only
  double best_accuracy = 0;
  double final_loss = 0;
  double best_loss = 0;        // the lowest
  double time_to_target = -1;  // seconds; < 0 when the target was never reached
  double samples_per_second = 0;
  double bytes_sent = 0;  // by all workers
  double mean_staleness = 0;
  double p99_staleness = 0;  // the 99th percentile of every server's chunk pushes
  double comm_share = 0;    // of a worker's training time spent in pulls, pushes, exchanges
  double wall_seconds = 0;  // the job's (summary.json)
  // The evaluator's curves: its wall seconds, epochs, the servers' version it scored
  // (global_step), test accuracy and loss per evaluation, and the bytes all workers had sent
  // by then (each worker's rows computed on versions up to that one).
  std::vector<double> curve_seconds, curve_epochs, curve_steps, curve_accuracy, curve_loss,
      curve_bytes;
};

// The figures of one finished variant, read from its run directory.
absl::StatusOr<VariantResult> ReadVariantResult(const StudyVariant& variant, const RunDir& run_dir,
                                                double target_accuracy);

// A variant whose training diverged: its evaluator's curves until then (none without
// evaluations), no final figures, and its status "diverged at step N (simulated s T)" (or
// "(after T s)" for real processes): N the most steps a worker made, T the time of its last.
VariantResult ReadDivergedResult(const StudyVariant& variant, const RunDir& run_dir);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_STUDY_STUDY_RESULTS_H_
