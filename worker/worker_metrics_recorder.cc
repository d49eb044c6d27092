#include "worker/worker_metrics_recorder.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/metrics/event_file.h"
#include "core/status_macros.h"

namespace monsoon {

WorkerTotals WorkerTotals::FromMetricsRow(const WorkerMetricsRow& row) {
  WorkerTotals t;
  t.wall_seconds = row.wall_seconds;
  t.samples = std::llround(row.samples_per_second * t.wall_seconds);
  t.bytes_sent = row.bytes_sent;
  t.bytes_received = row.bytes_received;
  t.comm_seconds = row.comm_seconds;
  t.emulated_delay_seconds = row.emulated_delay_seconds;
  return t;
}

absl::StatusOr<std::unique_ptr<WorkerMetricsRecorder>> WorkerMetricsRecorder::Open(
    const RunDir& run_dir, int index, std::optional<double> last_step, const Clock& clock) {
  const std::string path = run_dir.worker_metrics_path(index);
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<CsvMetricsWriter> writer,
      CsvMetricsWriter::Create(path, ColumnNames<WorkerMetricsRow>(), last_step));
  MONSOON_ASSIGN_OR_RETURN(
      std::unique_ptr<EventFileWriter> events,
      EventFileWriter::Create(run_dir.tensorboard_dir(absl::StrCat("worker-", index))));
  writer->MirrorTo(std::move(events), "step");
  MONSOON_ASSIGN_OR_RETURN(const std::optional<WorkerMetricsRow> last,
                           RowFrom<WorkerMetricsRow>(writer->continued_from(), path));
  const WorkerTotals earlier = WorkerTotals::FromMetricsRow(last.value_or(WorkerMetricsRow{}));
  return std::unique_ptr<WorkerMetricsRecorder>(
      new WorkerMetricsRecorder(std::move(writer), earlier, clock));
}

WorkerMetricsRecorder::WorkerMetricsRecorder(std::unique_ptr<CsvMetricsWriter> writer,
                                             const WorkerTotals& earlier, const Clock& clock)
    : writer_(std::move(writer)),
      earlier_(earlier),
      clock_(clock),
      start_(clock.Now() - absl::Seconds(earlier.wall_seconds)) {}

double WorkerMetricsRecorder::wall_seconds() const {
  return absl::ToDoubleSeconds(clock_.Now() - start_);
}

absl::Status WorkerMetricsRecorder::Record(WorkerMetricsRow row, int64_t samples,
                                           const TransferCounters& io) {
  row.wall_seconds = wall_seconds();
  const double seconds = std::max(row.wall_seconds, 1e-9);
  row.samples_per_second = static_cast<double>(samples) / seconds;
  row.bytes_sent = earlier_.bytes_sent + static_cast<double>(io.bytes_sent);
  row.bytes_received = earlier_.bytes_received + static_cast<double>(io.bytes_received);
  row.comm_share = row.comm_seconds / seconds;
  return writer_->Append(RowValues(row));
}

}  // namespace monsoon
