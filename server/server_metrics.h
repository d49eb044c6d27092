// The columns of a server's metrics CSV (RUN_DIR/metrics/server-J.csv), declared once: the
// server writes these rows about every second and the launcher reads them back.
#ifndef MONSOON_SERVER_SERVER_METRICS_H_
#define MONSOON_SERVER_SERVER_METRICS_H_

#include "core/metrics/metrics.h"

namespace monsoon {

// Totals since the server started (ServerStats), its memory, and how many workers have
// finished or been lost. Only the final row, written after the final checkpoint, may show
// every worker finished or lost: `monsoon summarize` takes that row for "training finished".
struct ServerMetricsRow {
  double wall_seconds = 0;
  double pushes_applied = 0;
  double pushes_dropped = 0;
  double pushes_rejected = 0;
  double pulls_served = 0;
  double bytes_received = 0;
  double bytes_sent = 0;
  double workers_finished = 0;
  double mean_staleness = 0;
  double state_bytes = 0;
  double peak_rss_bytes = 0;
  double pushes_duplicate = 0;
  double workers_lost = 0;
};

template <>
struct MetricsSchema<ServerMetricsRow> {
  using R = ServerMetricsRow;
  static constexpr MetricsColumn<R> kColumns[] = {
      {"wall_seconds", &R::wall_seconds},     {"pushes_applied", &R::pushes_applied},
      {"pushes_dropped", &R::pushes_dropped}, {"pushes_rejected", &R::pushes_rejected},
      {"pulls_served", &R::pulls_served},     {"bytes_received", &R::bytes_received},
      {"bytes_sent", &R::bytes_sent},         {"workers_finished", &R::workers_finished},
      {"mean_staleness", &R::mean_staleness}, {"state_bytes", &R::state_bytes},
      {"peak_rss_bytes", &R::peak_rss_bytes}, {"pushes_duplicate", &R::pushes_duplicate},
      {"workers_lost", &R::workers_lost},
  };
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_SERVER_METRICS_H_
