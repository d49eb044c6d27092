// The parameter server's logic without any transport: one server's chunks of the flat
// parameter space, the job's update rule (Downpour, sync/BSP, SSP, EASGD/EAMSGD), version and
// clock counters, pulls that wait for a version or clock, staleness accounting, and the
// bookkeeping of which clients have finished. The gRPC adapter (grpc_parameter_server.h) and
// the in-process client (worker/in_process_ps_client.h) both drive this class.
#ifndef MONSOON_SERVER_PARAMETER_SERVER_H_
#define MONSOON_SERVER_PARAMETER_SERVER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/checkpoint_file.h"
#include "core/data_shard.h"
#include "core/job_config.h"
#include "core/model.h"
#include "core/optimizer.h"
#include "core/sharding_plan.h"

namespace monsoon {

enum class ClientRole { kWorker, kEvaluator };

// The `worker` of a pull that comes from no worker (the evaluator, a test).
constexpr int kNotAWorker = -1;

// Staleness histogram buckets: 0 .. kStalenessBuckets - 2 exactly; the last bucket counts
// every staleness >= kStalenessBuckets - 1.
constexpr int kStalenessBuckets = 65;

struct ServerStats {
  int server_index = 0;
  uint64_t pushes_applied = 0;    // chunk pushes/exchanges applied (or folded into a round)
  uint64_t pushes_dropped = 0;    // valid chunk pushes the staleness policy dropped
  uint64_t pushes_rejected = 0;   // invalid requests (wrong size, NaN/Inf, unknown chunk, ...)
  uint64_t pushes_duplicate = 0;  // chunk pushes/exchanges acknowledged as duplicates
  uint64_t pulls_served = 0;
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

// A chunk's values as they were at one moment. The server shares them copy-on-write (the
// next update to the chunk writes a new buffer while anyone holds this one), so holding a
// snapshot costs no copy and never blocks or changes the chunk.
struct ChunkSnapshot {
  PullInfo info;
  std::shared_ptr<const std::vector<float>> values;
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

// How this server updates its chunks: everything it needs from the job config.
struct ServerRules {
  Algorithm algorithm = Algorithm::kDownpour;
  OptimizerSpec optimizer;    // applied to pushed gradients (downpour, ssp, sync rounds)
  StalenessConfig staleness;  // downpour, ssp
  SyncConfig sync;            // sync
  EasgdConfig easgd;          // easgd, eamsgd
  // Scales optimizer.learning_rate by the epoch each gradient was computed at.
  LearningRateSchedule schedule = LearningRateSchedule::kConstant;
  double epochs = 1;  // the job's training.epochs (the schedule's end)
  // A worker unheard (no RPC, no heartbeat) for this long is lost; then the server carries on
  // without it, or fails (Health()) when stop_on_worker_loss.
  absl::Duration peer_timeout = absl::Seconds(10);
  // A worker, or the evaluator, never heard from this long after the server started is lost
  // too (it died before connecting, say); it may still join later.
  absl::Duration join_timeout = absl::Seconds(300);
  bool stop_on_worker_loss = false;

  static ServerRules FromConfig(const JobConfig& config);
};

// Thread-safe: calls on different chunks run in parallel; each chunk has its own lock, held
// only while its values are read or updated.
class ParameterServer {
 public:
  // Holds plan.ChunksOf(index), initialised to the model's initial values for `seed`.
  ParameterServer(int index, const ShardingPlan& plan, const ModelSpec& spec, uint64_t seed,
                  const ServerRules& rules, int workers_expected, bool evaluator_expected);
  // Calls CancelWaiters().
  ~ParameterServer();

  // Fails every waiting pull, and every later one that would wait, with Cancelled; called
  // before the transport shuts down so that no call stays open.
  void CancelWaiters();

  int index() const { return index_; }
  const ShardingPlan& plan() const { return plan_; }
  // Bytes of everything this server holds per chunk: weights, optimizer state, a sync round's
  // sum, DC-ASGD's per-worker copies.
  size_t state_bytes() const { return state_bytes_; }
  const ServerRules& rules() const { return rules_; }

  // A client announces itself: FailedPrecondition when its plan fingerprint differs from this
  // server's. For a worker, records its incarnation (FailedPrecondition when older than one
  // already seen) and `peer` (its address, for reports); a worker that had finished or was lost
  // rejoins. Returns where the worker resumes (zero for the evaluator or a fresh worker).
  absl::StatusOr<ResumePoint> Hello(uint64_t plan_fingerprint, ClientRole role, int index,
                                    uint64_t incarnation = 0, const std::string& peer = "");

  // A client is alive. FailedPrecondition for a superseded worker incarnation.
  absl::Status Heartbeat(ClientRole role, int index, uint64_t incarnation);

  // Where worker `index` resumes (see ResumePoint).
  ResumePoint ResumePointOf(int index) const;

  // OK, or why the server must stop (a lost worker with stop_on_worker_loss).
  absl::Status Health() const;
  // Messages about peers (lost, rejoined) since the last call, for the server's log.
  std::vector<std::string> TakeEvents();

  // Writes every chunk (values, optimizer state, version, clocks, workers' data positions, a
  // sync round in progress, the ledger) and the workers' incarnations. Each chunk is written
  // under its own lock, so training goes on meanwhile.
  void SaveCheckpoint(CheckpointWriter* out) const;
  // Replaces this server's state with a checkpoint's; call before serving. FailedPrecondition
  // when it was written for another server, layout or algorithm; DataLoss when malformed.
  absl::Status LoadCheckpoint(CheckpointReader* in);

  // Every (chunk, worker) pair of this server, in chunk order.
  std::vector<LedgerEntry> Ledger() const;

  // NotFound when this server does not hold the chunk.
  absl::StatusOr<size_t> ChunkSize(int chunk_id) const;

  // Calls done(OK) once `condition` holds for the chunk, or done(DeadlineExceeded) at
  // `deadline`, or done(Cancelled) when the server shuts down; exactly once, possibly before
  // WhenReady returns, never with a lock of this class held. Versions and clocks only grow,
  // so the condition still holds when done() then calls Read.
  void WhenReady(int chunk_id, const PullCondition& condition, absl::Time deadline,
                 std::function<void(absl::Status)> done);

  // OK when a pull may follow a push in the same call (Downpour: its pulls never wait);
  // FailedPrecondition naming the algorithm otherwise.
  absl::Status PullAfterPushAllowed() const;

  // The chunk's current values, without a copy. With DC-ASGD, a worker's pull is remembered as
  // the weights its next gradient for the chunk is computed on.
  absl::StatusOr<ChunkSnapshot> Snapshot(int chunk_id, int worker = kNotAWorker);
  // Snapshot copied into out, which must hold exactly ChunkSize(chunk_id) floats.
  absl::StatusOr<PullInfo> Read(int chunk_id, absl::Span<float> out, int worker = kNotAWorker);

  // WhenReady + Read, blocking the calling thread (tests and the in-process client).
  absl::StatusOr<PullInfo> Pull(int chunk_id, absl::Span<float> out,
                                const PullCondition& condition = {},
                                absl::Duration timeout = absl::Seconds(30),
                                int worker = kNotAWorker);

  // A gradient for one chunk, computed on weights of `base_version`. Applied per the rules (at
  // once, or into the current synchronous round) unless `origin.sequence` was processed
  // already (a duplicate: OK, nothing changes). The weights stay unchanged on every error:
  // InvalidArgument when the size is wrong, a value is NaN/Inf, the worker index is unknown
  // or base_version is ahead of the chunk; NotFound for a chunk this server does not hold;
  // OutOfRange when an earlier sequence number is missing; FailedPrecondition when the job's
  // algorithm exchanges weights instead, a worker pushes twice in a round, or the incarnation
  // has been superseded.
  absl::StatusOr<PushResult> Push(int chunk_id, int worker_index, uint64_t base_version,
                                  absl::Span<const float> gradient, const PushOrigin& origin = {});

  // The EASGD elastic exchange for one chunk: with the worker's weights x and the centre c,
  // d = alpha (x - c), c += d, writes d to `difference` (the worker then does x -= d).
  // base_version is the version the worker saw at its previous exchange (for staleness).
  // Same validation and duplicate rule as Push (a duplicate returns d = 0);
  // FailedPrecondition when the job's algorithm pushes gradients.
  absl::StatusOr<PushResult> Exchange(int chunk_id, int worker_index, uint64_t base_version,
                                      absl::Span<const float> weights, absl::Span<float> difference,
                                      const PushOrigin& origin = {});

  // Records that a client will send nothing more. A synchronous round that now has all it
  // can get is applied, and waiting pulls are rechecked. InvalidArgument for an unknown index.
  absl::Status Finish(ClientRole role, int index);

  // True once every expected worker has finished or been lost, and the evaluator has finished
  // or been lost.
  bool AllFinished() const;
  // Blocks until AllFinished() or the timeout; returns AllFinished().
  bool WaitAllFinished(absl::Duration timeout) const;

  ServerStats Stats() const;

 private:
  struct Waiter {
    PullCondition condition;
    absl::Time deadline;
    std::function<void(absl::Status)> done;
  };
  struct ChunkState {
    Chunk meta;
    absl::Mutex mu;
    // Shared with the snapshots still held (pull replies being sent, DC-ASGD's pulled copies);
    // changed only through Writable().
    std::shared_ptr<std::vector<float>> values ABSL_GUARDED_BY(mu);
    std::vector<float> optimizer_state ABSL_GUARDED_BY(mu);
    uint64_t version ABSL_GUARDED_BY(mu) = 0;
    // clock[w]: valid pushes (or exchanges) of this chunk from worker w, processed once each;
    // position[w]: w's data position after the last of them.
    std::vector<uint64_t> clock ABSL_GUARDED_BY(mu);
    std::vector<DataPosition> position ABSL_GUARDED_BY(mu);
    // The ledger (LedgerEntry) per worker.
    std::vector<uint64_t> applied ABSL_GUARDED_BY(mu);
    std::vector<uint64_t> sequence_sum ABSL_GUARDED_BY(mu);
    std::vector<uint64_t> duplicates ABSL_GUARDED_BY(mu);
    // The synchronous round being gathered: weighted gradient sum, total weight, the furthest
    // epoch its gradients were computed at (the learning-rate schedule's), fresh gradients
    // (they count towards the quorum) and which workers sent them.
    std::vector<float> round_sum ABSL_GUARDED_BY(mu);
    float round_weight ABSL_GUARDED_BY(mu) = 0;
    double round_epoch ABSL_GUARDED_BY(mu) = 0;
    int round_fresh ABSL_GUARDED_BY(mu) = 0;
    std::vector<bool> round_from ABSL_GUARDED_BY(mu);
    // DC-ASGD: pulled[w] is the chunk as worker w last pulled it.
    std::vector<std::shared_ptr<const std::vector<float>>> pulled ABSL_GUARDED_BY(mu);
    std::vector<Waiter> waiters ABSL_GUARDED_BY(mu);
  };
  using Ready = std::vector<std::function<void(absl::Status)>>;

  absl::StatusOr<ChunkState*> Find(int chunk_id) const;
  // Checks what Push and Exchange have in common (and hears from the worker); counts a
  // rejection when it fails.
  absl::StatusOr<ChunkState*> Validate(int chunk_id, int worker_index,
                                       absl::Span<const float> payload, bool exchange,
                                       const PushOrigin& origin);
  // Duplicate detection: true when origin.sequence was processed for the chunk already (then
  // *result describes the duplicate); OutOfRange when an earlier sequence is missing.
  absl::StatusOr<bool> IsDuplicate(ChunkState* chunk, int worker, const PushOrigin& origin,
                                   PushResult* result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Books a processed push: the worker's clock and data position, and the ledger.
  void Processed(ChunkState* chunk, int worker, const PushOrigin& origin, bool applied)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Notes that worker `index` was heard from by `incarnation`; FailedPrecondition when a newer
  // incarnation has been seen. A lost worker heard again is live again.
  absl::Status Heard(int index, uint64_t incarnation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(clients_mu_);
  bool Gone(int worker) const ABSL_SHARED_LOCKS_REQUIRED(clients_mu_) {
    return worker_finished_[worker] || worker_liveness_[worker].lost;
  }
  // What the server knows of a client's liveness (a worker's or the evaluator's).
  struct Liveness {
    explicit Liveness(std::string name) : who(std::move(name)) {}
    std::string who;      // "worker 2", "evaluator": for events
    std::string address;  // its gRPC peer, once known
    absl::Time last_heard = absl::InfinitePast();
    bool lost = false;
  };
  // Records that a client is alive (and back, if it was lost).
  void HeardFrom(Liveness* client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(clients_mu_);
  // Marks workers, and the evaluator, as lost: heard before and silent for longer than the
  // peer timeout, or never heard and the join timeout past since this server started.
  void CheckPeers(absl::Time now);
  // A worker left or came back: closes sync rounds it no longer holds up, rechecks waiters.
  void LiveWorkersChanged();
  // The staleness of a push computed on base_version; InvalidArgument (counted as a
  // rejection) when the chunk has not reached that version.
  absl::StatusOr<uint64_t> StalenessOf(const ChunkState& chunk, int worker_index,
                                       uint64_t base_version) ABSL_SHARED_LOCKS_REQUIRED(chunk.mu);
  uint64_t SlowestClock(const ChunkState& chunk) const ABSL_SHARED_LOCKS_REQUIRED(chunk.mu);
  bool Satisfied(const ChunkState& chunk, const PullCondition& c) const
      ABSL_SHARED_LOCKS_REQUIRED(chunk.mu);
  // The chunk's values for changing: first copied into a buffer of their own when a snapshot
  // still holds them (copy-on-write).
  static absl::Span<float> Writable(ChunkState* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Applies the optimizer to the chunk with gradient g, computed at `epoch` of its worker's
  // progress (the learning-rate schedule's input), and bumps its version.
  void ApplyUpdate(ChunkState* chunk, absl::Span<const float> g, double epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Applies the synchronous round when it has its quorum.
  void MaybeCloseRound(ChunkState* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Moves the callbacks of waiters that are satisfied (or, when `now` is given, expired)
  // into *ready, with the status each should get.
  void CollectWaiters(ChunkState* chunk, absl::Time now, std::vector<absl::Status>* statuses,
                      Ready* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Rechecks every chunk's waiters; calls those that are ready.
  void ReleaseWaiters(absl::Time now);
  void RecordValid(const PushResult& result, size_t payload_floats, int worker_index, double epoch);
  void Event(std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(clients_mu_);
  int LiveWorkers() const;
  bool AllFinishedLocked() const ABSL_SHARED_LOCKS_REQUIRED(clients_mu_);
  void ExpireLoop();
  absl::Status ClosedError() const;

  // Immutable after construction.
  const int index_;
  const ShardingPlan plan_;
  const ServerRules rules_;
  const std::unique_ptr<Optimizer> optimizer_;
  const int workers_expected_;
  const bool evaluator_expected_;
  std::map<int, std::unique_ptr<ChunkState>> chunks_;  // the map itself is never modified
  size_t state_bytes_ = 0;

  std::atomic<uint64_t> pushes_applied_{0};
  std::atomic<uint64_t> pushes_dropped_{0};
  std::atomic<uint64_t> pushes_rejected_{0};
  std::atomic<uint64_t> pushes_duplicate_{0};
  std::atomic<uint64_t> pulls_served_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::array<std::atomic<uint64_t>, kStalenessBuckets> staleness_{};
  std::atomic<int> waiting_{0};  // waiters queued on all chunks
  std::atomic<bool> closed_{false};

  // Lock order: a chunk's mu before clients_mu_.
  mutable absl::Mutex clients_mu_;
  std::vector<bool> worker_finished_ ABSL_GUARDED_BY(clients_mu_);
  std::vector<double> worker_epoch_ ABSL_GUARDED_BY(clients_mu_);
  std::vector<uint64_t> incarnation_ ABSL_GUARDED_BY(clients_mu_);
  std::vector<Liveness> worker_liveness_ ABSL_GUARDED_BY(clients_mu_);
  bool evaluator_finished_ ABSL_GUARDED_BY(clients_mu_) = false;
  Liveness evaluator_liveness_ ABSL_GUARDED_BY(clients_mu_){"evaluator"};
  // When the chunks were ready (initialised, or loaded from a checkpoint): the join timeout
  // counts from here.
  absl::Time started_ ABSL_GUARDED_BY(clients_mu_);
  absl::Status health_ ABSL_GUARDED_BY(clients_mu_);
  std::vector<std::string> events_ ABSL_GUARDED_BY(clients_mu_);

  // Fails waiters whose deadline has passed, every few milliseconds while any wait, and
  // checks for lost workers.
  absl::Mutex expire_mu_;
  bool shutting_down_ ABSL_GUARDED_BY(expire_mu_) = false;
  std::thread expire_thread_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_PARAMETER_SERVER_H_
