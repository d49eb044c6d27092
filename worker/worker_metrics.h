// The columns of the workers' and the evaluator's metrics CSVs (RUN_DIR/metrics/), declared
// once: the roles write these rows and the launcher reads them back (core/metrics/metrics.h).
#ifndef MONSOON_WORKER_WORKER_METRICS_H_
#define MONSOON_WORKER_WORKER_METRICS_H_

#include "core/metrics/metrics.h"

namespace monsoon {

// One row per step of worker-I.csv. `clock` counts the worker's pushes (or exchanges);
// `slowest_clock` is the fewest pushes of any live worker seen at the last pull; `version`
// the smallest chunk version of the weights the step computed with; `staleness` the mean
// staleness of the last push's chunks; `comm_seconds` the time spent so far in pulls, pushes
// and exchanges, waiting for other workers included, and `comm_share` its share of
// `wall_seconds`; `learning_rate` the rate of the update the step fed (BaseLearningRate, as
// scheduled at `epoch`). Totals carry on across restarts.
struct WorkerMetricsRow {
  double step = 0;
  double wall_seconds = 0;
  double epoch = 0;
  double loss = 0;
  double samples_per_second = 0;
  double bytes_sent = 0;
  double bytes_received = 0;
  double version = 0;
  double clock = 0;
  double slowest_clock = 0;
  double staleness = 0;
  double comm_seconds = 0;
  double emulated_delay_seconds = 0;  // slept on purpose (stragglers emulation), cumulative
  double comm_share = 0;
  double learning_rate = 0;
};

template <>
struct MetricsSchema<WorkerMetricsRow> {
  using R = WorkerMetricsRow;
  static constexpr MetricsColumn<R> kColumns[] = {
      {"step", &R::step},
      {"wall_seconds", &R::wall_seconds},
      {"epoch", &R::epoch},
      {"loss", &R::loss},
      {"samples_per_second", &R::samples_per_second},
      {"bytes_sent", &R::bytes_sent},
      {"bytes_received", &R::bytes_received},
      {"version", &R::version},
      {"clock", &R::clock},
      {"slowest_clock", &R::slowest_clock},
      {"staleness", &R::staleness},
      {"comm_seconds", &R::comm_seconds},
      {"emulated_delay_seconds", &R::emulated_delay_seconds},
      {"comm_share", &R::comm_share},
      {"learning_rate", &R::learning_rate},
  };
};

// One row per evaluation of evaluator.csv: the weights of `global_step` (the smallest chunk
// version) scored on the test set, at the workers' mean progress `epoch`.
struct EvaluatorMetricsRow {
  double wall_seconds = 0;
  double global_step = 0;
  double epoch = 0;
  double test_loss = 0;
  double test_accuracy = 0;
};

template <>
struct MetricsSchema<EvaluatorMetricsRow> {
  using R = EvaluatorMetricsRow;
  static constexpr MetricsColumn<R> kColumns[] = {
      {"wall_seconds", &R::wall_seconds},
      {"global_step", &R::global_step},
      {"epoch", &R::epoch},
      {"test_loss", &R::test_loss},
      {"test_accuracy", &R::test_accuracy},
  };
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_WORKER_METRICS_H_
