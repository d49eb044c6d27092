#include "launcher/study/study_results.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "core/file_util.h"
#include "core/metrics/metrics.h"
#include "core/status_macros.h"
#include "worker/worker_metrics.h"

namespace monsoon {
namespace {

// The evaluator's curves and the figures they give.
absl::Status ReadEvaluations(const RunDir& run_dir, double target_accuracy, VariantResult* r) {
  const std::string path = run_dir.evaluator_metrics_path();
  MONSOON_ASSIGN_OR_RETURN(const std::vector<EvaluatorMetricsRow> eval,
                           ReadRows<EvaluatorMetricsRow>(path));
  if (eval.empty()) {
    return absl::DataLossError(absl::StrCat(path, " has no evaluations to compare"));
  }
  for (const EvaluatorMetricsRow& row : eval) {
    r->curve_seconds.push_back(row.wall_seconds);
    r->curve_steps.push_back(row.global_step);
    r->curve_epochs.push_back(row.epoch);
    r->curve_accuracy.push_back(row.test_accuracy);
    r->curve_loss.push_back(row.test_loss);
    r->best_accuracy = std::max(r->best_accuracy, row.test_accuracy);
    r->best_loss =
        r->curve_loss.size() == 1 ? row.test_loss : std::min(r->best_loss, row.test_loss);
    if (target_accuracy > 0 && r->time_to_target < 0 && row.test_accuracy >= target_accuracy) {
      r->time_to_target = row.wall_seconds;
    }
  }
  r->final_accuracy = r->curve_accuracy.back();
  r->final_loss = r->curve_loss.back();
  return absl::OkStatus();
}

// The job's wall time, from its summary.json.
absl::StatusOr<double> JobWallSeconds(const RunDir& run_dir) {
  MONSOON_ASSIGN_OR_RETURN(const std::string text, ReadFile(run_dir.summary_path()));
  const nlohmann::json summary = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object() || !summary.contains("wall_seconds") ||
      !summary["wall_seconds"].is_number()) {
    return absl::DataLossError(absl::StrCat(run_dir.summary_path(), " has no wall_seconds"));
  }
  return summary["wall_seconds"].get<double>();
}

// Adds worker `i`'s totals, and the bytes it had sent by each evaluation.
absl::Status AddWorker(const RunDir& run_dir, int i, int workers, VariantResult* r) {
  MONSOON_ASSIGN_OR_RETURN(const std::vector<WorkerMetricsRow> rows,
                           ReadRows<WorkerMetricsRow>(run_dir.worker_metrics_path(i)));
  if (rows.empty()) return absl::OkStatus();
  const WorkerMetricsRow& last = rows.back();
  r->bytes_sent += last.bytes_sent;
  r->samples_per_second += last.samples_per_second;
  r->comm_share += last.comm_seconds / std::max(last.wall_seconds, 1e-9) / workers;
  // Each evaluation scored the servers' weights at some version (global_step); the worker had
  // sent its bytes of each row that computed on a version up to that one. Versions pair the
  // roles without their clocks, which start at different moments (after each loads its data).
  size_t row = 0;
  double sent_by_then = 0;
  for (size_t k = 0; k < r->curve_steps.size(); ++k) {
    while (row < rows.size() && rows[row].version <= r->curve_steps[k]) {
      sent_by_then = rows[row++].bytes_sent;
    }
    r->curve_bytes[k] += sent_by_then;
  }
  return absl::OkStatus();
}

}  // namespace

// A result naming `variant`, without figures.
VariantResult Named(const StudyVariant& variant) {
  VariantResult r;
  r.name = variant.name;
  r.algorithm = kAlgorithmNames.Name(variant.config.training.algorithm);
  r.knobs = VariantLabel(variant);
  return r;
}

absl::StatusOr<VariantResult> ReadVariantResult(const StudyVariant& variant, const RunDir& run_dir,
                                                double target_accuracy) {
  const JobConfig& c = variant.config;
  VariantResult r = Named(variant);
  MONSOON_RETURN_IF_ERROR(ReadEvaluations(run_dir, target_accuracy, &r));
  MONSOON_ASSIGN_OR_RETURN(r.wall_seconds, JobWallSeconds(run_dir));
  r.curve_bytes.assign(r.curve_seconds.size(), 0);
  for (int i = 0; i < c.cluster.workers; ++i) {
    MONSOON_RETURN_IF_ERROR(AddWorker(run_dir, i, c.cluster.workers, &r));
  }
  std::vector<uint64_t> staleness;
  for (int j = 0; j < c.cluster.servers; ++j) {
    MONSOON_ASSIGN_OR_RETURN(CsvTable histogram, ReadCsvTable(run_dir.staleness_path(j)));
    for (const auto& row : histogram.rows) {
      const size_t s = static_cast<size_t>(row[0]);
      staleness.resize(std::max(staleness.size(), s + 1), 0);
      staleness[s] += static_cast<uint64_t>(row[1]);
    }
  }
  r.mean_staleness = HistogramMean(staleness);
  r.p99_staleness = HistogramQuantile(staleness, 0.99);
  return r;
}

VariantResult ReadDivergedResult(const StudyVariant& variant, const RunDir& run_dir) {
  const JobConfig& c = variant.config;
  VariantResult r = Named(variant);
  if (!ReadEvaluations(run_dir, /*target_accuracy=*/0, &r).ok()) r = Named(variant);  // none yet
  r.diverged = true;
  r.curve_bytes.assign(r.curve_seconds.size(), 0);
  double steps = 0, seconds = 0;
  for (int i = 0; i < c.cluster.workers; ++i) {
    AddWorker(run_dir, i, c.cluster.workers, &r).IgnoreError();  // the bytes on the curves
    const absl::StatusOr<std::vector<WorkerMetricsRow>> rows =
        ReadRows<WorkerMetricsRow>(run_dir.worker_metrics_path(i));
    if (!rows.ok() || rows->empty()) continue;
    steps = std::max(steps, rows->back().step);
    seconds = std::max(seconds, rows->back().wall_seconds);
  }
  r.status = absl::StrFormat(c.simulation.enabled ? "diverged at step %.0f (simulated s %.3g)"
                                                  : "diverged at step %.0f (after %.3g s)",
                             steps, seconds);
  return r;
}

}  // namespace monsoon
