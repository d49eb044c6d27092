#include "launcher/local/summary.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/metrics/metrics.h"
#include "core/model/model.h"
#include "core/status_macros.h"
#include "server/server_metrics.h"
#include "worker/worker_metrics.h"

namespace monsoon {

namespace {

// summary.json keeps its keys in the order written.
using Json = nlohmann::ordered_json;

}  // namespace

absl::Status TrainingFinished(const JobConfig& config, const RunDir& run_dir) {
  for (int j = 0; j < config.cluster.servers; ++j) {
    const std::string path = run_dir.server_metrics_path(j);
    MONSOON_ASSIGN_OR_RETURN(const std::optional<ServerMetricsRow> row,
                             ReadLastRow<ServerMetricsRow>(path));
    const int finished = row.has_value() ? static_cast<int>(row->workers_finished) : 0;
    const int lost = row.has_value() ? static_cast<int>(row->workers_lost) : 0;
    const int clients = config.cluster.pushing_clients();
    if (!row.has_value() || finished == 0 || finished + lost < clients) {
      return absl::FailedPreconditionError(absl::StrCat(
          "training did not finish: server ", j,
          !row.has_value() ? absl::StrCat(" wrote no metrics (", path, ")")
                           : absl::StrCat(" last saw ", finished, " of ", clients,
                                          config.cluster.aggregate_per_node ? " nodes" : " workers",
                                          " finished and ", lost, " lost (", path, " at ",
                                          row->wall_seconds, " s)"),
          "; its weights are not the job's result. Continue the run: monsoon run --resume ",
          run_dir.root, ", or requeue the SLURM job"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobProgress> ReadProgress(const JobConfig& config, const RunDir& run_dir) {
  JobProgress p;
  p.min_epoch = std::numeric_limits<double>::infinity();
  for (int i = 0; i < config.cluster.workers; ++i) {
    MONSOON_ASSIGN_OR_RETURN(const std::optional<WorkerMetricsRow> row,
                             ReadLastRow<WorkerMetricsRow>(run_dir.worker_metrics_path(i)));
    const WorkerMetricsRow last = row.value_or(WorkerMetricsRow{});
    p.min_epoch = std::min(p.min_epoch, last.epoch);
    p.samples_per_second += last.samples_per_second;
    p.worker_seconds = std::max(p.worker_seconds, last.wall_seconds);
  }
  for (int j = 0; j < config.cluster.servers; ++j) {
    MONSOON_ASSIGN_OR_RETURN(const std::optional<ServerMetricsRow> row,
                             ReadLastRow<ServerMetricsRow>(run_dir.server_metrics_path(j)));
    if (row.has_value())
      p.workers_lost = std::max(p.workers_lost, static_cast<int>(row->workers_lost));
  }
  MONSOON_ASSIGN_OR_RETURN(const std::optional<EvaluatorMetricsRow> eval,
                           ReadLastRow<EvaluatorMetricsRow>(run_dir.evaluator_metrics_path()));
  if (eval.has_value()) {
    p.has_eval = true;
    p.test_accuracy = eval->test_accuracy;
    p.test_loss = eval->test_loss;
    p.global_step = eval->global_step;
  }
  return p;
}

std::string DurationText(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
}

std::optional<double> SecondsLeft(const JobConfig& config, const JobProgress& p) {
  const double epochs = config.training.epochs;
  if (!(p.min_epoch > 0.01 && p.min_epoch < epochs && p.worker_seconds > 0)) return std::nullopt;
  return p.worker_seconds * (epochs - p.min_epoch) / p.min_epoch;
}

std::string ProgressLine(const JobConfig& config, const absl::StatusOr<JobProgress>& progress) {
  if (!progress.ok()) return absl::StrCat("progress unknown: ", progress.status().message());
  const JobProgress& p = *progress;
  std::string line = absl::StrFormat("epoch %.2f/%d | %.0f samples/s", p.min_epoch,
                                     config.training.epochs, p.samples_per_second);
  if (const std::optional<double> left = SecondsLeft(config, p)) {
    absl::StrAppend(&line, " | ETA ", DurationText(*left));
  }
  if (p.workers_lost > 0) absl::StrAppendFormat(&line, " | %d worker(s) lost", p.workers_lost);
  if (p.has_eval) {
    if (config.model.loss == LossType::kSoftmaxCrossEntropy) {
      absl::StrAppendFormat(&line, " | test acc %.4f loss %.4f", p.test_accuracy, p.test_loss);
    } else {
      absl::StrAppendFormat(&line, " | test loss %.6f", p.test_loss);
    }
  }
  return line;
}

std::optional<std::string> CollapseWarning(const JobConfig& config, const JobProgress& p) {
  if (!p.has_eval || config.model.loss != LossType::kSoftmaxCrossEntropy) return std::nullopt;
  const double classes = config.model.output_dim;
  if (p.test_accuracy > 1 / classes + 0.02 && std::isfinite(p.test_loss)) return std::nullopt;
  return absl::StrFormat(
      "training ended at chance level: test accuracy %.4f for %d classes (chance %.4f), test "
      "loss %.4f (a uniform guess scores ln %d = %.4f). The weights learned nothing useful: "
      "the learning rate is too high for this many workers (each step is stale by about as "
      "many pushes as there are workers) or training diverged: %s",
      p.test_accuracy, config.model.output_dim, 1 / classes, p.test_loss, config.model.output_dim,
      std::log(classes), kDivergenceRemedies);
}

std::string SummaryJson(const JobConfig& config, const RunDir& run_dir, const JobProgress& p,
                        const FinalWeights& weights, size_t trace_events, double wall_seconds,
                        const SimulationFacts* simulation) {
  const bool classify = config.model.loss == LossType::kSoftmaxCrossEntropy;
  const size_t num_params = weights.values.size();
  const Json null;
  Json summary;
  summary["job"] = config.job;
  summary["algorithm"] = kAlgorithmNames.Name(config.training.algorithm);
  summary["run_dir"] = run_dir.root;
  summary["servers"] = config.cluster.servers;
  summary["workers"] = config.cluster.workers;
  summary["workers_lost"] = p.workers_lost;
  summary["final_test_accuracy"] = p.has_eval && classify ? Json(p.test_accuracy) : null;
  summary["final_test_loss"] = p.has_eval ? Json(p.test_loss) : null;
  summary["global_step"] = p.has_eval || weights.from_checkpoints ? Json(p.global_step) : null;
  summary["wall_seconds"] = wall_seconds;
  summary["simulation"] = simulation == nullptr
                              ? null
                              : Json{{"step_seconds", simulation->step_seconds},
                                     {"events", simulation->events},
                                     {"real_seconds", simulation->real_seconds},
                                     {"setup_seconds", simulation->setup_seconds},
                                     {"apply_gbyte_per_s", simulation->apply_gbyte_per_s},
                                     {"busiest_server_share", simulation->busiest_server_share}};
  summary["training_seconds"] = p.worker_seconds;
  summary["samples_per_second"] = p.samples_per_second;
  summary["epochs"] = p.min_epoch;
  summary["num_parameters"] = num_params;
  summary["params_file"] = run_dir.params_path();
  summary["params_from"] = weights.from_checkpoints ? "server checkpoints" : "evaluator";
  summary["trace_file"] = trace_events > 0 ? Json(run_dir.trace_path()) : null;
  summary["trace_events"] = trace_events;
  summary["params_format"] = "raw little-endian float32, flat layout below";
  summary["parameters"] = Json::array();
  for (const ParamTensor& t : Model::Layout(config.model)) {
    Json tensor = {{"name", t.shape.name}, {"shape", t.shape.dims}, {"offset", t.offset}};
    if (num_params <= 64) {
      tensor["values"] = std::vector<float>(weights.values.begin() + t.offset,
                                            weights.values.begin() + t.offset + t.shape.size());
    }
    summary["parameters"].push_back(tensor);
  }
  return summary.dump(2) + "\n";
}

std::string TimedLine(const ProgressOptions& options, double elapsed, const std::string& line) {
  return absl::StrFormat("%s[%6.1fs] %s", options.label, elapsed, line);
}

void ShowProgress(const std::string& line, bool tty) {
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line.c_str());
}

}  // namespace monsoon
