// The parameter server's logic without any transport: the façade over one server's chunks
// (chunk_state.h), its clients (membership.h), the job's update rule (chunk_updater.h), pulls
// that wait for a version or clock (wait_queue.h) and its checkpoints (server_checkpoint.h).
// It validates each request, rejects duplicates (chunk_ledger.h), hands the rest to the
// update rule and releases the pulls that can now go. The gRPC adapter
// (grpc_parameter_server.h) and the in-process client (worker/in_process_ps_client.h) both
// drive this class.
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
#include "core/clock.h"
#include "core/model/model.h"
#include "core/process/chunk_window.h"
#include "core/run/checkpoint_file.h"
#include "core/sharding_plan.h"
#include "server/chunk_state.h"
#include "server/chunk_updater.h"
#include "server/membership.h"
#include "server/ps_types.h"
#include "server/server_checkpoint.h"
#include "server/server_rules.h"

namespace monsoon {

// A chunk's values as they were at one moment. The server shares them copy-on-write (the
// next update to the chunk writes a new buffer while anyone holds this one), so holding a
// snapshot costs no copy and never blocks or changes the chunk.
struct ChunkSnapshot {
  PullInfo info;
  std::shared_ptr<const std::vector<float>> values;
};

// Who expires a server's waiting pulls and checks for lost peers: a thread of the server's own,
// every few milliseconds, or its owner, by calling Tick (a test; a simulation, on its clock).
enum class ServerTicks { kOwnThread, kByOwner };

// Fills `out` with the initial values of the flat range [offset, offset + out.size()).
using InitialValuesFn = std::function<void(size_t offset, absl::Span<float> out)>;
// Monsoon's model's initial values for `seed` (Model::InitialValues).
InitialValuesFn ModelInitialValues(const ModelSpec& spec, uint64_t seed);

// Thread-safe: calls on different chunks run in parallel; each chunk has its own lock, held
// only while its values are read or updated. Push may use per-thread scratch buffers; callers
// hold no spans into them.
class ParameterServer {
 public:
  // Holds plan.ChunksOf(index), each chunk initialised by initial_values(its offset, its
  // values). Reads the time from `clock`, which must outlive the server.
  ParameterServer(int index, const ShardingPlan& plan, const InitialValuesFn& initial_values,
                  const ServerRules& rules, int workers_expected, bool evaluator_expected,
                  const Clock& clock = Clock::System(),
                  ServerTicks ticks = ServerTicks::kOwnThread);
  // Calls CancelWaiters().
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // Fails waiting pulls whose deadline is before `now` and marks peers lost that have been
  // silent too long at `now` (the expiry thread calls it; with a manual clock, the owner).
  void Tick(absl::Time now);

  // Fails every waiting pull, and every later one that would wait, with Cancelled; called
  // before the transport shuts down so that no call stays open.
  void CancelWaiters();

  int index() const { return index_; }
  const ShardingPlan& plan() const { return plan_; }
  // Bytes of everything this server holds per chunk: weights, optimizer state, a sync round's
  // sum, DC-ASGD's per-worker copies, and the chunk window once it is made.
  size_t state_bytes() const { return state_bytes_ + window_bytes_.load(); }
  const ServerRules& rules() const { return rules_; }

  // A client announces itself: FailedPrecondition when its plan fingerprint differs from this
  // server's. For a worker, records its incarnation (FailedPrecondition when older than one
  // already seen) and `peer` (its address, for reports); a worker that had finished or was lost
  // rejoins. Returns where the worker resumes (zero for the evaluator or a fresh worker).
  absl::StatusOr<ResumePoint> Hello(uint64_t plan_fingerprint, RoleKind role, int index,
                                    uint64_t incarnation = 0, const std::string& peer = "");

  // A client is alive. FailedPrecondition for a superseded worker incarnation.
  absl::Status Heartbeat(RoleKind role, int index, uint64_t incarnation);

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

  // OK for a worker index of this job; else InvalidArgument "WHAT from worker I; this job has
  // workers 0..N-1".
  absl::Status CheckWorker(const char* what, int index) const {
    return membership_.CheckWorker(what, index);
  }

  // The chunk's current values, without a copy. With DC-ASGD, a worker's pull is remembered as
  // the weights its next gradient for the chunk is computed on. InvalidArgument for a worker
  // (not kNotAWorker) the job does not have.
  absl::StatusOr<ChunkSnapshot> Snapshot(int chunk_id, int worker = kNotAWorker);
  // The window this server publishes its chunks in for the clients on its host, made and
  // filled by the first call (every later change to a chunk is published under its lock). Null
  // when the job must see every pull: DC-ASGD remembers what each worker pulled.
  absl::StatusOr<const ChunkWindow*> Window();
  // Whether Window() has made and filled the window.
  bool HasWindow() const { return window_bytes_.load() > 0; }
  // Counts `reads` pulls of `bytes` payload bytes that a client made through the window.
  void RecordWindowReads(uint64_t reads, uint64_t bytes);

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
  absl::Status Finish(RoleKind role, int index);

  // True once every expected worker has finished or been lost, and the evaluator has finished
  // or been lost.
  bool AllFinished() const;
  // Blocks until AllFinished() or the timeout; returns AllFinished().
  bool WaitAllFinished(absl::Duration timeout) const;

  ServerStats Stats() const;

 private:
  absl::StatusOr<ChunkState*> Find(int chunk_id) const;
  // Checks what Push and Exchange have in common (and hears from the worker); counts a
  // rejection when it fails.
  absl::StatusOr<ChunkState*> Validate(int chunk_id, int worker_index,
                                       absl::Span<const float> payload, bool exchange,
                                       const PushOrigin& origin);
  // The duplicate check and staleness of a push (a rejection counted when it fails): true
  // when it is a duplicate (*result then describes it).
  absl::StatusOr<bool> Admit(ChunkState* chunk, int worker, uint64_t base_version,
                             const PushOrigin& origin, PushResult* result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Books a valid push in the ledger and collects the pulls it satisfies.
  void Book(ChunkState* chunk, int worker, const PushOrigin& origin, PushResult* result,
            std::vector<Release>* released) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  bool Satisfied(const ChunkState& chunk, const PullCondition& c) const
      ABSL_SHARED_LOCKS_REQUIRED(chunk.mu);
  // The fewest pushes of the chunk any live worker has made (0 with none live).
  uint64_t SlowestClock(const ChunkState& chunk) const ABSL_SHARED_LOCKS_REQUIRED(chunk.mu);
  // Writes the chunk's version and clock to the window, once there is one, and its values
  // when they changed since it last did.
  void Publish(ChunkState* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Moves the waiters that are satisfied (or, at `now`, expired) into *released.
  void CollectWaiters(ChunkState* chunk, absl::Time now, std::vector<Release>* released)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Rechecks every chunk's waiters; calls those that are ready.
  void ReleaseWaiters(absl::Time now);
  // A worker left or came back: closes sync rounds it no longer holds up, rechecks waiters.
  void LiveWorkersChanged();
  void RecordValid(const PushResult& result, size_t payload_floats, int worker_index, double epoch);
  absl::Status Reject(absl::Status status);
  void ExpireLoop();
  absl::Status ClosedError() const;
  CheckpointHeader Header() const;

  // Immutable after construction.
  const int index_;
  const ShardingPlan plan_;
  const ServerRules rules_;
  const Clock& clock_;
  Membership membership_;  // thread-safe
  const std::unique_ptr<ChunkUpdater> updater_;
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

  // Made once by Window(); window_ is set only when it is filled.
  absl::Mutex window_mu_;
  std::unique_ptr<ChunkWindow> window_owner_ ABSL_GUARDED_BY(window_mu_);
  std::atomic<ChunkWindow*> window_{nullptr};
  std::atomic<size_t> window_bytes_{0};

  // Lock order: a chunk's mu before the membership's.
  // With ServerTicks::kOwnThread, calls Tick every few milliseconds while pulls wait, and
  // checks for lost peers; joined by the destructor.
  absl::Mutex expire_mu_;
  bool shutting_down_ ABSL_GUARDED_BY(expire_mu_) = false;
  std::thread expire_thread_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_PARAMETER_SERVER_H_
