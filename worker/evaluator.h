// The evaluator role's logic: periodically pull the server weights and score the test set;
// once every worker has finished, score the final weights and report them.
#ifndef MONSOON_WORKER_EVALUATOR_H_
#define MONSOON_WORKER_EVALUATOR_H_

#include <atomic>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/clock.h"
#include "core/data/dataset.h"
#include "core/metrics/metrics.h"
#include "core/metrics/trace.h"
#include "core/model/trainable_model.h"
#include "worker/ps_client.h"
#include "worker/worker_metrics.h"

namespace monsoon {

struct EvalResult {
  double wall_seconds = 0;
  uint64_t global_step = 0;  // updates applied to every chunk
  double epoch = 0;          // the workers' mean progress in epochs, per the servers
  double test_loss = 0;
  double test_accuracy = 0;   // classification only
  std::vector<float> params;  // the weights that were scored
};

// Scores `params` (model->num_params() floats) on the whole of `test`, `batch_size` examples
// at a time; with no test set (null), by the model's own function (ScoreItself).
absl::StatusOr<TestScore> ScoreTestSet(TrainableModel* model, const Dataset* test, int batch_size,
                                       const float* params);

// Borrows everything it is given.
class Evaluator {
 public:
  // `trace` gets every evaluation: its pull and its scoring (thread 0). Results' wall_seconds
  // count from construction, plus `earlier_wall_seconds`: the clock the evaluator's earlier
  // processes in the run left (its metrics CSV's last row; 0 for its first). `test` null: the
  // model scores itself (ScoreTestSet). wall_seconds are `clock`'s (borrowed).
  Evaluator(TrainableModel* model, const Dataset* test, PsClient* client, int batch_size,
            CsvMetricsWriter* metrics /* nullable */, TraceWriter* trace /* nullable */,
            double earlier_wall_seconds = 0, const Clock& clock = Clock::System())
      : model_(model),
        test_(test),
        client_(client),
        batch_size_(batch_size),
        metrics_(metrics),
        trace_(trace),
        clock_(clock),
        start_(clock.Now() - absl::Seconds(earlier_wall_seconds)) {}

  // Pulls the current weights and scores the whole test set; appends a metrics row.
  absl::StatusOr<EvalResult> EvaluateOnce();
  // The same, with the servers' stats already fetched (they give the workers' progress).
  absl::StatusOr<EvalResult> Evaluate(const std::vector<ServerStats>& stats);

  // Evaluates every `interval` until all workers have finished (per the servers' stats, asked
  // every second), then at once a last time, tells the servers it has finished and returns
  // that final result. Cancelled
  // when *stop becomes true, else the first RPC error.
  absl::StatusOr<EvalResult> RunUntilWorkersFinish(absl::Duration interval,
                                                   const std::atomic<bool>* stop);

 private:
  // Waits until `next`, asking the servers every second whether every worker has finished
  // (or been lost): true as soon as they have, so that the final evaluation need not wait
  // for the interval's end. Cancelled when *stop becomes true.
  absl::StatusOr<bool> WaitForNext(absl::Time next, const std::atomic<bool>* stop);

  TrainableModel* const model_;
  const Dataset* const test_;
  PsClient* const client_;
  const int batch_size_;
  CsvMetricsWriter* const metrics_;
  TraceWriter* const trace_;
  const Clock& clock_;
  const absl::Time start_;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_EVALUATOR_H_
