#include "worker/evaluator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/config/job_config.h"
#include "core/exit_status.h"
#include "core/status_macros.h"

namespace monsoon {

namespace {

// The workers' mean progress: each worker's latest epoch reported to any server.
double MeanWorkerEpoch(const std::vector<ServerStats>& stats) {
  std::vector<double> latest;
  for (const ServerStats& s : stats) {
    latest.resize(std::max(latest.size(), s.worker_epochs.size()), 0.0);
    for (size_t w = 0; w < s.worker_epochs.size(); ++w) {
      latest[w] = std::max(latest[w], s.worker_epochs[w]);
    }
  }
  if (latest.empty()) return 0;
  double sum = 0;
  for (double e : latest) sum += e;
  return sum / latest.size();
}

}  // namespace

absl::StatusOr<TestScore> ScoreTestSet(TrainableModel* model, const Dataset* test_set,
                                       int batch_size, const float* params) {
  model->SetParams(params);
  if (test_set == nullptr) return model->ScoreItself();
  const Dataset& test = *test_set;
  const size_t rows = test.size();
  const size_t fd = test.feature_dim;
  const size_t td = test.target_dim;
  double loss_sum = 0;
  int64_t correct = 0;
  for (size_t begin = 0; begin < rows; begin += batch_size) {
    const int n = static_cast<int>(std::min<size_t>(batch_size, rows - begin));
    const BatchResult batch =
        model->Evaluate(test.features.data() + begin * fd, test.targets.data() + begin * td, n);
    loss_sum += batch.loss_sum;
    correct += batch.correct;
  }
  MONSOON_RETURN_IF_ERROR(model->Synchronize());
  return TestScore{loss_sum / static_cast<double>(rows),
                   static_cast<double>(correct) / static_cast<double>(rows)};
}

absl::StatusOr<EvalResult> Evaluator::EvaluateOnce() {
  MONSOON_ASSIGN_OR_RETURN(std::vector<ServerStats> stats, client_->AllStats());
  return Evaluate(stats);
}

absl::StatusOr<EvalResult> Evaluator::Evaluate(const std::vector<ServerStats>& stats) {
  EvalResult result;
  result.epoch = MeanWorkerEpoch(stats);
  result.params.resize(model_->num_params());
  const absl::Time pulling = clock_.Now();
  MONSOON_ASSIGN_OR_RETURN(PullResult pull,
                           client_->PullAll(absl::MakeSpan(result.params), {}, nullptr));
  result.global_step = pull.min_version;
  const absl::Time scoring = clock_.Now();
  MONSOON_ASSIGN_OR_RETURN(const TestScore score,
                           ScoreTestSet(model_, test_, batch_size_, result.params.data()));
  if (!std::isfinite(score.loss)) {
    return MarkDiverged(absl::FailedPreconditionError(absl::StrCat(
        "evaluator: the servers' weights at global step ", result.global_step,
        " score a test loss of ", score.loss, ": training diverged (", kDivergenceRemedies,
        "), or the test data holds a NaN or an infinity")));
  }
  result.test_loss = score.loss;
  result.test_accuracy = score.accuracy;
  if (trace_ != nullptr) {
    trace_->Span(0, "pull weights", pulling, scoring,
                 {{"global_step", static_cast<double>(result.global_step)}});
    trace_->Span(0, "score test set", scoring, clock_.Now(),
                 {{"test_loss", result.test_loss}, {"test_accuracy", result.test_accuracy}});
  }
  result.wall_seconds = absl::ToDoubleSeconds(clock_.Now() - start_);
  if (metrics_ != nullptr) {
    EvaluatorMetricsRow row;
    row.wall_seconds = result.wall_seconds;
    row.global_step = static_cast<double>(result.global_step);
    row.epoch = result.epoch;
    row.test_loss = result.test_loss;
    row.test_accuracy = result.test_accuracy;
    MONSOON_RETURN_IF_ERROR(metrics_->Append(RowValues(row)));
  }
  return result;
}

namespace {

bool WorkersDone(const std::vector<ServerStats>& stats) {
  return std::all_of(stats.begin(), stats.end(), [](const ServerStats& s) {
    return s.workers_finished + static_cast<int>(s.workers_lost.size()) == s.workers_expected;
  });
}

}  // namespace

absl::StatusOr<bool> Evaluator::WaitForNext(absl::Time next, const std::atomic<bool>* stop) {
  absl::Time look = absl::Now() + absl::Seconds(1);
  while (absl::Now() < next) {
    if (stop != nullptr && stop->load()) return absl::CancelledError("evaluator stopped by signal");
    if (absl::Now() >= look) {
      MONSOON_ASSIGN_OR_RETURN(const std::vector<ServerStats> stats, client_->AllStats());
      if (WorkersDone(stats)) return true;
      look = absl::Now() + absl::Seconds(1);
    }
    absl::SleepFor(std::min(absl::Milliseconds(50), next - absl::Now()));
  }
  return false;
}

absl::StatusOr<EvalResult> Evaluator::RunUntilWorkersFinish(absl::Duration interval,
                                                            const std::atomic<bool>* stop) {
  while (true) {
    const absl::Time next = absl::Now() + interval;
    MONSOON_ASSIGN_OR_RETURN(std::vector<ServerStats> stats, client_->AllStats());
    if (WorkersDone(stats)) break;
    MONSOON_RETURN_IF_ERROR(Evaluate(stats).status());
    MONSOON_ASSIGN_OR_RETURN(const bool done, WaitForNext(next, stop));
    if (done) break;
  }
  MONSOON_ASSIGN_OR_RETURN(EvalResult final_result, EvaluateOnce());
  MONSOON_RETURN_IF_ERROR(client_->Finish());
  return final_result;
}

}  // namespace monsoon
