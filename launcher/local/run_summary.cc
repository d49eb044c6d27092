#include "launcher/local/run_summary.h"

#include "absl/strings/str_cat.h"
#include "core/compute/cpu/cpu_backend.h"
#include "core/file_util.h"
#include "core/job/job_data.h"
#include "core/metrics/trace.h"
#include "core/model/model.h"
#include "core/status_macros.h"
#include "server/server_role.h"
#include "worker/evaluator.h"
#include "worker/worker_role.h"

namespace monsoon {
namespace {

// The servers' final checkpoints as the final weights, written to params.bin and, when the job
// has a test set, scored on the CPU into `p` (the evaluator's last row predates them).
absl::StatusOr<FinalWeights> WeightsFromServers(const JobConfig& config, const RunDir& run_dir,
                                                JobProgress* p) {
  MONSOON_ASSIGN_OR_RETURN(CheckpointedWeights final_weights,
                           WeightsFromCheckpoints(config, run_dir));
  FinalWeights weights{std::move(final_weights.weights), true};
  const std::vector<float>& values = weights.values;
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(
      run_dir.params_path(),
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float))));
  p->global_step = static_cast<double>(final_weights.global_step);
  p->has_eval = false;
  // A worker program's model (model.type: program) is scored only by its own evaluator.
  if (config.data.HasTestSet() && config.model.type != ModelType::kProgram) {
    MONSOON_ASSIGN_OR_RETURN(Dataset test, LoadSplit(config, /*train=*/false));
    CpuBackend backend;
    MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::Create(config.model, &backend));
    MONSOON_ASSIGN_OR_RETURN(
        const TestScore score,
        ScoreTestSet(model.get(), &test, config.evaluation.batch_size, values.data()));
    p->has_eval = true;
    p->test_loss = score.loss;
    p->test_accuracy = score.accuracy;
  }
  return weights;
}

}  // namespace

absl::StatusOr<FinalWeights> FetchFinalWeights(const JobConfig& config, const RunDir& run_dir,
                                               JobProgress* p) {
  absl::StatusOr<std::string> bytes = ReadFile(run_dir.params_path());
  if (absl::IsNotFound(bytes.status())) return WeightsFromServers(config, run_dir, p);
  if (!bytes.ok()) return bytes.status();
  const size_t num_params = Model::NumParams(config.model);
  if (bytes->size() != num_params * sizeof(float)) {
    return absl::DataLossError(absl::StrCat(run_dir.params_path(), " has ", bytes->size(),
                                            " bytes; expected ", num_params * sizeof(float)));
  }
  FinalWeights weights{std::vector<float>(num_params), false};
  std::copy(bytes->begin(), bytes->end(), reinterpret_cast<char*>(weights.values.data()));
  return weights;
}

absl::StatusOr<JobProgress> WriteSummary(const JobConfig& config, const RunDir& run_dir,
                                         double wall_seconds, const SimulationFacts* simulation) {
  MONSOON_RETURN_IF_ERROR(TrainingFinished(config, run_dir));
  MONSOON_ASSIGN_OR_RETURN(JobProgress p, ReadProgress(config, run_dir));
  MONSOON_ASSIGN_OR_RETURN(const FinalWeights weights, FetchFinalWeights(config, run_dir, &p));
  // The roles' traces, joined for the viewer (null when the job wrote none).
  MONSOON_ASSIGN_OR_RETURN(const size_t trace_events,
                           MergeTraces(run_dir.trace_dir(), run_dir.trace_path()));
  MONSOON_RETURN_IF_ERROR(WriteFileAtomically(
      run_dir.summary_path(),
      SummaryJson(config, run_dir, p, weights, trace_events, wall_seconds, simulation)));
  return p;
}

}  // namespace monsoon
