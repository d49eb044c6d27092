// `monsoon run` of a job with `simulation.enabled`: W workers and S servers in this process on
// a virtual clock (README "Simulated clusters"). The servers are ParameterServer objects, the
// workers TrainingWorker loops over their own models and data shards, exactly as the real
// roles run them; only time is simulated: each worker's compute takes the step-time model's
// virtual seconds, each message its link's.
#ifndef MONSOON_LAUNCHER_SIMULATION_SIMULATED_JOB_H_
#define MONSOON_LAUNCHER_SIMULATION_SIMULATED_JOB_H_

#include <atomic>

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"
#include "launcher/local/summary.h"

namespace monsoon {

// Runs the prepared job in `run_dir` and writes what a real run writes (workers', servers'
// and the evaluator's metrics in simulated seconds, staleness histograms, ledgers,
// params.bin, summary.json with "simulated": true), showing its progress as `progress` says
// (the simulated time, then ProgressLine's figures: samples per simulated second, the time
// left in real time). Cancelled when *stop becomes true; DeadlineExceeded when it is still
// running after training.timeout_seconds of real time.
absl::StatusOr<JobProgress> RunSimulatedJob(const JobConfig& config, const RunDir& run_dir,
                                            const ProgressOptions& progress,
                                            const std::atomic<bool>* stop);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_SIMULATED_JOB_H_
