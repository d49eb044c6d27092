// One worker's metrics rows: RUN_DIR/metrics/worker-INDEX.csv with its TensorBoard scalars,
// continued across the worker's processes in a run. TrainingWorker records a row after every
// step, and so does a hand-driven Python worker's monsoon.Client.report: one implementation,
// so that a restarted worker's totals carry on in both.
#ifndef MONSOON_WORKER_WORKER_METRICS_RECORDER_H_
#define MONSOON_WORKER_WORKER_METRICS_RECORDER_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/metrics/metrics.h"
#include "core/run/run_dir.h"
#include "worker/ps_client.h"
#include "worker/worker_metrics.h"

namespace monsoon {

// What this worker's earlier processes in the run had spent by their last metrics row. A
// restarted worker carries it on, so that its metrics rows and report count the whole run:
// wall_seconds (without the time between processes), samples (and so samples_per_second),
// bytes_sent, bytes_received and comm_seconds.
struct WorkerTotals {
  double wall_seconds = 0;
  int64_t samples = 0;
  double bytes_sent = 0;
  double bytes_received = 0;
  double comm_seconds = 0;
  double emulated_delay_seconds = 0;
  // From the last row of the worker's metrics CSV.
  static WorkerTotals FromMetricsRow(const WorkerMetricsRow& row);
};

// Owns the worker's metrics writer. Not thread-safe: one thread records.
class WorkerMetricsRecorder {
 public:
  // Opens worker `index`'s metrics CSV and TensorBoard directory, appending. Given
  // `last_step`, the rows after it go (a restarted worker replays those steps); the earlier
  // totals come from the last row left. The worker's clock starts now (by `clock`, borrowed),
  // carrying on from them.
  static absl::StatusOr<std::unique_ptr<WorkerMetricsRecorder>> Open(
      const RunDir& run_dir, int index, std::optional<double> last_step = std::nullopt,
      const Clock& clock = Clock::System());

  const WorkerTotals& earlier() const { return earlier_; }
  // Seconds this worker has run in the run, its earlier processes' included.
  double wall_seconds() const;

  // Appends a row: `row`'s step, epoch, loss, version, clock, slowest_clock, staleness,
  // comm_seconds, emulated_delay_seconds and learning_rate as given (run totals); here
  // wall_seconds, samples_per_second from `samples` (the run's total), bytes (the earlier
  // totals plus this process's client counters `io`) and comm_share.
  absl::Status Record(WorkerMetricsRow row, int64_t samples, const TransferCounters& io);

 private:
  WorkerMetricsRecorder(std::unique_ptr<CsvMetricsWriter> writer, const WorkerTotals& earlier,
                        const Clock& clock);

  const std::unique_ptr<CsvMetricsWriter> writer_;
  const WorkerTotals earlier_;
  const Clock& clock_;
  const absl::Time start_;  // now, less the earlier processes' wall time
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_WORKER_METRICS_RECORDER_H_
