// The one conversion, each way, between a server's ServerStats and its wire form (the Stats
// RPC: the evaluator's progress, `monsoon status`).
#ifndef MONSOON_SERVER_STATS_WIRE_H_
#define MONSOON_SERVER_STATS_WIRE_H_

#include "proto/monsoon.pb.h"
#include "server/ps_types.h"

namespace monsoon {

inline void ToWire(const ServerStats& s, wire::StatsResponse* out) {
  out->set_server_index(s.server_index);
  out->set_pushes_applied(s.pushes_applied);
  out->set_pushes_dropped(s.pushes_dropped);
  out->set_pushes_rejected(s.pushes_rejected);
  out->set_pushes_duplicate(s.pushes_duplicate);
  out->set_pulls_served(s.pulls_served);
  out->set_pulls_waiting(s.pulls_waiting);
  out->set_bytes_received(s.bytes_received);
  out->set_bytes_sent(s.bytes_sent);
  out->set_workers_finished(s.workers_finished);
  out->set_workers_expected(s.workers_expected);
  out->set_evaluator_finished(s.evaluator_finished);
  for (uint64_t n : s.staleness_histogram) out->add_staleness_histogram(n);
  for (double e : s.worker_epochs) out->add_worker_epochs(e);
  for (int w : s.workers_lost) out->add_workers_lost(w);
  for (int w : s.finished_workers) out->add_finished_workers(w);
}

inline ServerStats FromWire(const wire::StatsResponse& r) {
  ServerStats s;
  s.server_index = r.server_index();
  s.pushes_applied = r.pushes_applied();
  s.pushes_dropped = r.pushes_dropped();
  s.pushes_rejected = r.pushes_rejected();
  s.pushes_duplicate = r.pushes_duplicate();
  s.pulls_served = r.pulls_served();
  s.pulls_waiting = r.pulls_waiting();
  s.bytes_received = r.bytes_received();
  s.bytes_sent = r.bytes_sent();
  s.workers_finished = r.workers_finished();
  s.workers_expected = r.workers_expected();
  s.evaluator_finished = r.evaluator_finished();
  s.staleness_histogram.assign(r.staleness_histogram().begin(), r.staleness_histogram().end());
  s.worker_epochs.assign(r.worker_epochs().begin(), r.worker_epochs().end());
  s.workers_lost.assign(r.workers_lost().begin(), r.workers_lost().end());
  s.finished_workers.assign(r.finished_workers().begin(), r.finished_workers().end());
  return s;
}

}  // namespace monsoon

#endif  // MONSOON_SERVER_STATS_WIRE_H_
