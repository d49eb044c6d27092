// The vocabulary parameter servers and their clients share: who a client is, what a pull
// waits for, where a push comes from and what became of it, where a restarted worker resumes,
// and the servers' statistics and exactly-once ledger. Plain data: no locks, no config.
#ifndef MONSOON_SERVER_PS_TYPES_H_
#define MONSOON_SERVER_PS_TYPES_H_

#include <cstdint>
#include <vector>

#include "core/data/data_shard.h"
#include "core/role.h"

namespace monsoon {

// The `worker` of a pull that comes from no worker (the evaluator, a test).
constexpr int kNotAWorker = -1;

// Staleness histogram buckets: 0 .. kStalenessBuckets - 2 exactly; the last bucket counts
// every staleness >= kStalenessBuckets - 1.
constexpr int kStalenessBuckets = 4097;  // cluster.workers is at most 4096

struct ServerStats {
  int server_index = 0;
  uint64_t pushes_applied = 0;    // chunk pushes/exchanges applied (or folded into a round)
  uint64_t pushes_dropped = 0;    // valid chunk pushes the staleness policy dropped
  uint64_t pushes_rejected = 0;   // invalid requests (wrong size, NaN/Inf, unknown chunk, ...)
  uint64_t pushes_duplicate = 0;  // chunk pushes/exchanges acknowledged as duplicates
  uint64_t pulls_served = 0;
  int pulls_waiting = 0;         // pulls parked on a condition right now
  uint64_t bytes_received = 0;  // gradient / weight payload bytes accepted
  uint64_t bytes_sent = 0;      // weight / elastic-difference payload bytes served
  int workers_finished = 0;
  int workers_expected = 0;
  bool evaluator_finished = false;
  // Staleness of every valid chunk push or exchange, bucketed as described above.
  std::vector<uint64_t> staleness_histogram;
  // Each worker's latest reported progress in epochs (0 before its first push).
  std::vector<double> worker_epochs;
  // Workers given up on (nothing heard within the peer timeout), by index.
  std::vector<int> workers_lost;
  // Workers that have told the server they finished (workers_finished of them), by index.
  std::vector<int> finished_workers;
};

// What a pull waits for (both must hold): the chunk's version reaches min_version, and every
// live worker has pushed this chunk at least min_clock times (SSP).
struct PullCondition {
  uint64_t min_version = 0;
  uint64_t min_clock = 0;
};

struct PullInfo {
  uint64_t version = 0;        // updates applied to the chunk
  uint64_t slowest_clock = 0;  // fewest pushes any live worker has made to it
};

// Where a push or exchange comes from. Every chunk of one push carries the same origin.
struct PushOrigin {
  uint64_t incarnation = 0;  // the worker process (larger for each restart)
  // 1, 2, ...: the worker's sequence-th push. A chunk processes sequence k only after k - 1;
  // a repeat is a duplicate (acknowledged, not applied). 0: unsequenced (in-process tests and
  // benchmarks), never treated as a duplicate.
  uint64_t sequence = 0;
  DataPosition position;  // the worker's data position after the steps this push carries
  double epoch = 0;       // the worker's progress in epochs (Stats; the learning-rate schedule's)
};

struct PushResult {
  uint64_t version = 0;  // the chunk's version after this push
  uint64_t staleness = 0;
  bool applied = false;    // false: dropped (staleness policy, late-gradient rule) or duplicate
  bool duplicate = false;  // already processed: nothing was changed
};

// Where a (re)starting worker continues: the fewest of its pushes this server has processed
// for any of its chunks, and the worker's data position right after that push.
struct ResumePoint {
  uint64_t sequence = 0;
  DataPosition position;
};

// Exactly-once evidence for one chunk and one worker: how many of the worker's pushes were
// applied to the chunk (weights or a sync round), and the sum of their sequence numbers. With
// pushes 1..n each applied once, applied == n and sequence_sum == n (n + 1) / 2.
struct LedgerEntry {
  int chunk = 0;
  int worker = 0;
  uint64_t processed = 0;  // pushes processed (applied or dropped): the worker's clock
  uint64_t applied = 0;
  uint64_t sequence_sum = 0;
  uint64_t duplicates = 0;  // repeats acknowledged without being applied
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_PS_TYPES_H_
