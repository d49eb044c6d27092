// Writing summary.json at the end of a run: the final weights fetched (the evaluator's
// params.bin, or the servers' final checkpoints, scored here on the CPU), the traces merged, and
// the summary written (launcher/local/summary.h assembles it).
#ifndef MONSOON_LAUNCHER_LOCAL_RUN_SUMMARY_H_
#define MONSOON_LAUNCHER_LOCAL_RUN_SUMMARY_H_

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"
#include "launcher/local/summary.h"

namespace monsoon {

// The final weights: RUN_DIR/params.bin as the evaluator wrote it; without one (no evaluator
// in the job, or it died) the servers' final checkpoints, which are then written to params.bin
// and, where the job has a test set, scored into *p (its global step too). DataLoss for a
// params.bin of the wrong size.
absl::StatusOr<FinalWeights> FetchFinalWeights(const JobConfig& config, const RunDir& run_dir,
                                               JobProgress* p);

// Writes RUN_DIR/summary.json (and params.bin when no evaluator wrote it) and returns the
// figures it reports: those of the final weights. FailedPrecondition, and nothing written,
// unless TrainingFinished.
absl::StatusOr<JobProgress> WriteSummary(const JobConfig& config, const RunDir& run_dir,
                                         double wall_seconds,
                                         const SimulationFacts* simulation = nullptr);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_RUN_SUMMARY_H_
