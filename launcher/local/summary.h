// summary.json: the one-file answer to "how did this run go", assembled from the run
// directory's metrics and final weights; the live progress line. Reads metrics files only
// (run_summary.h fetches the final weights).
#ifndef MONSOON_LAUNCHER_LOCAL_SUMMARY_H_
#define MONSOON_LAUNCHER_LOCAL_SUMMARY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/config/job_config.h"
#include "core/run/run_dir.h"

namespace monsoon {

// Live figures read from the metrics CSVs (for the progress line and the summary).
struct JobProgress {
  double min_epoch = 0;           // the slowest worker's epochs
  double samples_per_second = 0;  // summed over workers
  double worker_seconds = 0;      // the longest worker's training time
  bool has_eval = false;
  double test_accuracy = 0;
  double test_loss = 0;
  double global_step = 0;
  int workers_lost = 0;  // the most workers any server has given up on
};
// NotFound naming a metrics file and a column it lacks.
absl::StatusOr<JobProgress> ReadProgress(const JobConfig& config, const RunDir& run_dir);
// The figures as one line: "epoch 3.41/12 | 20512 samples/s | ETA 1m52s | test acc 0.8512
// loss 0.4123" (with "| N worker(s) lost" when a server gave workers up; "test loss" alone for
// regression), or "progress unknown: " and why they could not be read.
std::string ProgressLine(const JobConfig& config, const absl::StatusOr<JobProgress>& progress);

// How a running job shows its progress on stderr: a line every `interval` (in place on a
// terminal), "[  12.3s] " after `label`.
struct ProgressOptions {
  absl::Duration interval = absl::Seconds(2);
  std::string label;  // starts each progress line (a study's "[3/6] tau16 ")
};
// `line` as the progress line `elapsed` real seconds in: "LABEL[  12.3s] LINE".
std::string TimedLine(const ProgressOptions& options, double elapsed, const std::string& line);
// Writes `line` to stderr: in place on a terminal (`tty`), else as a line of its own.
void ShowProgress(const std::string& line, bool tty);

// The training time left: the slowest worker's epochs to go at its pace so far (nullopt before
// it has done 1 % of an epoch, or after the last).
std::optional<double> SecondsLeft(const JobConfig& config, const JobProgress& p);

// "42s", "3m05s", "1h02m".
std::string DurationText(double seconds);

// OK when training has ended: every server's last metrics row has every worker finished or
// lost, and at least one finished (a server writes such a row only after its final
// checkpoint). Else FailedPrecondition naming the first server that did not get there: still
// running, or killed, stopped by a signal or out of time.
absl::Status TrainingFinished(const JobConfig& config, const RunDir& run_dir);

// For a classification job whose final test accuracy is within 2 points of chance (1 /
// classes), or whose test loss is not finite: a warning that training collapsed, with the
// figures and what to try. nullopt otherwise.
std::optional<std::string> CollapseWarning(const JobConfig& config, const JobProgress& progress);

// The weights a run ended with, as summary.json describes them.
struct FinalWeights {
  std::vector<float> values;      // the flat parameter vector
  bool from_checkpoints = false;  // the servers' final checkpoints, not the evaluator's file
};

// What a simulated run (launcher/simulation/) adds to its summary.json, as "simulation".
struct SimulationFacts {
  double step_seconds = 0;  // one step's compute before stragglers and step_distribution
  uint64_t events = 0;      // the event loop's
  double real_seconds = 0;  // the simulation's own run time on this machine
  double setup_seconds = 0;         // of real_seconds, building the cluster before its first event
  double apply_gbyte_per_s = 0;     // each server's update rate
  double busiest_server_share = 0;  // of the simulated time, the busiest server spent applying
};

// summary.json's text for a finished run: its figures `p`, its final weights and the number of
// trace events merged. `simulation` is null for a real run ("simulation": null). Classification jobs report test accuracy; regression jobs null
// accuracy. Models of at most 64 parameters list their values.
std::string SummaryJson(const JobConfig& config, const RunDir& run_dir, const JobProgress& p,
                        const FinalWeights& weights, size_t trace_events, double wall_seconds,
                        const SimulationFacts* simulation = nullptr);

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_LOCAL_SUMMARY_H_
