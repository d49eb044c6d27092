#include "launcher/summary.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/cpu_backend.h"
#include "core/json_text.h"
#include "core/metrics.h"
#include "core/model.h"
#include "core/status_macros.h"
#include "core/trace.h"
#include "server/server_role.h"
#include "worker/evaluator.h"
#include "worker/worker_role.h"

namespace monsoon {

absl::Status TrainingFinished(const JobConfig& config, const RunDir& run_dir) {
  for (int j = 0; j < config.cluster.servers; ++j) {
    const std::string path = run_dir.server_metrics_path(j);
    const auto row = ReadLastCsvRow(path);
    const int finished = static_cast<int>(row.Get("workers_finished"));
    const int lost = static_cast<int>(row.Get("workers_lost"));
    if (row.empty() || finished == 0 || finished + lost < config.cluster.workers) {
      return absl::FailedPreconditionError(absl::StrCat(
          "training did not finish: server ", j,
          row.empty() ? absl::StrCat(" wrote no metrics (", path, ")")
                      : absl::StrCat(" last saw ", finished, " of ", config.cluster.workers,
                                     " workers finished and ", lost, " lost (", path, " at ",
                                     row.Get("wall_seconds"), " s)"),
          "; its weights are not the job's result. Continue the run: monsoon run --resume ",
          run_dir.root, ", or requeue the SLURM job"));
    }
  }
  return absl::OkStatus();
}

JobProgress ReadProgress(const JobConfig& config, const RunDir& run_dir) {
  JobProgress p;
  p.min_epoch = std::numeric_limits<double>::infinity();
  for (int i = 0; i < config.cluster.workers; ++i) {
    const auto row = ReadLastCsvRow(run_dir.worker_metrics_path(i));
    p.min_epoch = std::min(p.min_epoch, row.Get("epoch"));
    p.samples_per_second += row.Get("samples_per_second");
    p.worker_seconds = std::max(p.worker_seconds, row.Get("wall_seconds"));
  }
  for (int j = 0; j < config.cluster.servers; ++j) {
    const auto row = ReadLastCsvRow(run_dir.server_metrics_path(j));
    p.workers_lost = std::max(p.workers_lost, static_cast<int>(row.Get("workers_lost")));
  }
  const auto eval = ReadLastCsvRow(run_dir.evaluator_metrics_path());
  if (!eval.empty()) {
    p.has_eval = true;
    p.test_accuracy = eval.Get("test_accuracy");
    p.test_loss = eval.Get("test_loss");
    p.global_step = eval.Get("global_step");
  }
  return p;
}

std::string ProgressLine(const JobConfig& config, const JobProgress& p) {
  std::string line = absl::StrFormat("epoch %.2f/%d | %.0f samples/s", p.min_epoch,
                                     config.training.epochs, p.samples_per_second);
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

absl::StatusOr<JobProgress> WriteSummary(const JobConfig& config, const RunDir& run_dir,
                                         double wall_seconds) {
  MONSOON_RETURN_IF_ERROR(TrainingFinished(config, run_dir));
  JobProgress p = ReadProgress(config, run_dir);
  const bool classify = config.model.loss == LossType::kSoftmaxCrossEntropy;
  const std::vector<ParamTensor> layout = Model::Layout(config.model);
  const size_t num_params = Model::NumParams(config.model);

  // The final weights: the evaluator's params.bin; without one (no evaluator in the job, or it
  // died) the servers' final checkpoints, written to params.bin here and, when the job has a
  // test set, scored here on the CPU (the evaluator's last row predates them).
  std::vector<float> values(num_params);
  absl::StatusOr<std::string> bytes = ReadFile(run_dir.params_path());
  const bool from_checkpoints = absl::IsNotFound(bytes.status());
  if (from_checkpoints) {
    MONSOON_ASSIGN_OR_RETURN(CheckpointedWeights final_weights,
                             WeightsFromCheckpoints(config, run_dir));
    values = std::move(final_weights.weights);
    MONSOON_RETURN_IF_ERROR(WriteFileAtomically(
        run_dir.params_path(),
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float))));
    p.global_step = static_cast<double>(final_weights.global_step);
    p.has_eval = false;
    if (config.cluster.evaluator) {
      MONSOON_ASSIGN_OR_RETURN(Dataset test, LoadSplit(config, /*train=*/false));
      CpuBackend backend;
      MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Create(config.model, &backend));
      MONSOON_ASSIGN_OR_RETURN(
          const TestScore score,
          ScoreTestSet(model.get(), test, config.evaluation.batch_size, values.data()));
      p.has_eval = true;
      p.test_loss = score.loss;
      p.test_accuracy = score.accuracy;
    }
  } else if (!bytes.ok()) {
    return bytes.status();
  } else if (bytes->size() != num_params * sizeof(float)) {
    return absl::DataLossError(absl::StrCat(run_dir.params_path(), " has ", bytes->size(),
                                            " bytes; expected ", num_params * sizeof(float)));
  } else {
    std::copy(bytes->begin(), bytes->end(), reinterpret_cast<char*>(values.data()));
  }
  // The roles' traces, joined for the viewer (null when the job wrote none).
  MONSOON_ASSIGN_OR_RETURN(const size_t trace_events,
                           MergeTraces(run_dir.trace_dir(), run_dir.trace_path()));
  std::vector<std::string> tensors;
  for (const ParamTensor& t : layout) {
    std::string entry = absl::StrCat("    {\"name\": ", JsonString(t.shape.name), ", \"shape\": [",
                                     t.shape.rows, ", ", t.shape.cols, "], \"offset\": ", t.offset);
    if (num_params <= 64) {
      std::vector<std::string> v;
      for (size_t i = 0; i < t.shape.size(); ++i) v.push_back(JsonNumber(values[t.offset + i]));
      absl::StrAppend(&entry, ", \"values\": [", absl::StrJoin(v, ", "), "]");
    }
    tensors.push_back(entry + "}");
  }
  const std::string json = absl::StrCat(
      "{\n", "  \"job\": ", JsonString(config.job), ",\n",
      "  \"algorithm\": ", JsonString(kAlgorithmNames.Name(config.training.algorithm)), ",\n",
      "  \"run_dir\": ", JsonString(run_dir.root), ",\n", "  \"servers\": ", config.cluster.servers,
      ",\n", "  \"workers\": ", config.cluster.workers, ",\n",
      "  \"workers_lost\": ", p.workers_lost, ",\n",
      "  \"final_test_accuracy\": ", p.has_eval && classify ? JsonNumber(p.test_accuracy) : "null",
      ",\n", "  \"final_test_loss\": ", p.has_eval ? JsonNumber(p.test_loss) : "null", ",\n",
      "  \"global_step\": ", p.has_eval || from_checkpoints ? JsonNumber(p.global_step) : "null",
      ",\n", "  \"wall_seconds\": ", JsonNumber(wall_seconds), ",\n",
      "  \"training_seconds\": ", JsonNumber(p.worker_seconds), ",\n",
      "  \"samples_per_second\": ", JsonNumber(p.samples_per_second), ",\n",
      "  \"epochs\": ", JsonNumber(p.min_epoch), ",\n", "  \"num_parameters\": ", num_params, ",\n",
      "  \"params_file\": ", JsonString(run_dir.params_path()), ",\n",
      "  \"params_from\": ", JsonString(from_checkpoints ? "server checkpoints" : "evaluator"),
      ",\n", "  \"trace_file\": ", trace_events > 0 ? JsonString(run_dir.trace_path()) : "null",
      ",\n", "  \"trace_events\": ", trace_events, ",\n",
      "  \"params_format\": \"raw little-endian float32, flat layout below\",\n",
      "  \"parameters\": [\n", absl::StrJoin(tensors, ",\n"), "\n  ]\n", "}\n");
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(run_dir.summary_path(), json));
  return p;
}

}  // namespace monsoon
