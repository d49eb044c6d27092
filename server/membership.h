// Who a parameter server's clients are and whether they live: each worker's incarnation,
// liveness, progress and whether it has finished, and the evaluator's. A worker is lost when
// silent for longer than the peer timeout, or never heard for longer than the join timeout
// since the server started; a lost worker heard again is live again.
#ifndef MONSOON_SERVER_MEMBERSHIP_H_
#define MONSOON_SERVER_MEMBERSHIP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/ps_types.h"
#include "server/server_rules.h"

namespace monsoon {

// Thread-safe (one mutex). Callers may hold a chunk's lock when calling it, never the reverse.
class Membership {
 public:
  // Expects workers 0..workers-1 and, when `evaluator`, the evaluator; `started` is when the
  // join timeout starts counting. `rules` is borrowed.
  Membership(int server_index, int workers, bool evaluator, const ServerRules& rules,
             absl::Time started);

  int workers() const { return workers_; }

  // OK for a worker index of this job; else InvalidArgument "WHAT from worker I; this job has
  // workers 0..N-1".
  absl::Status CheckWorker(const char* what, int index) const;
  // A worker's process `incarnation` was heard at `now` (an RPC or heartbeat); `peer` (when
  // not empty) is its address. FailedPrecondition when a newer incarnation has been heard.
  // REQUIRES: CheckWorker(index) is OK.
  absl::Status HeardWorker(int index, uint64_t incarnation, absl::Time now,
                           const std::string& peer = "");
  // A worker says hello again after finishing: it is live again. Returns whether it had
  // finished.
  bool Rejoin(int index);
  void HeardEvaluator(absl::Time now, const std::string& peer = "");
  // A client will send nothing more. Returns true when a worker left the live set.
  absl::StatusOr<bool> Finish(RoleKind role, int index);
  // Marks silent clients lost at `now`; returns true when a worker newly was. Called every
  // 250 ms or so: a gap of more than kStallGap since the last call means this server itself
  // was stalled (SIGSTOP, a frozen VM, swapping), and the silence it caused does not count
  // against its peers: their silence and the join timeout resume where they stood.
  bool CheckPeers(absl::Time now);
  static constexpr absl::Duration kStallGap = absl::Seconds(2);

  // Finished or lost.
  bool Gone(int worker) const;
  int LiveWorkers() const;
  // The fewest of `clocks[w]` over the live workers w; the largest uint64_t when none lives
  // (a clock condition then holds).
  uint64_t SlowestClock(absl::Span<const uint64_t> clocks) const;
  // True when every live worker w has from[w].
  bool EveryLiveWorkerIn(const std::vector<bool>& from) const;

  // Raises worker `index`'s reported progress to `epoch`.
  void RecordEpoch(int index, double epoch);
  bool AllFinished() const;
  // Blocks until AllFinished() or the timeout; returns AllFinished().
  bool WaitAllFinished(absl::Duration timeout) const;
  // OK, or why the server must stop (a lost worker when the rules stop on one).
  absl::Status Health() const;
  // "server J: ..." messages about peers (lost, back, rejoined) since the last call.
  std::vector<std::string> TakeEvents();
  // Fills the membership fields of `stats`.
  void FillStats(ServerStats* stats) const;

  // Each worker's newest incarnation (checkpointed), and restoring them; the join timeout then
  // counts from `started`.
  std::vector<uint64_t> incarnations() const;
  void Restore(std::vector<uint64_t> incarnations, absl::Time started);

 private:
  struct Liveness {
    explicit Liveness(std::string name) : who(std::move(name)) {}
    std::string who;      // "worker 2", "evaluator": for events
    std::string address;  // its gRPC peer, once known
    absl::Time last_heard = absl::InfinitePast();
    bool lost = false;
  };
  void Heard(Liveness* client, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "who (address) lost: ..." when `client` has newly been silent too long at `now`, else "".
  std::string NewlyLost(Liveness* client, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLost(const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves every client's last hearing, and the join timeout's start, `stall` later.
  void ExcuseStall(absl::Duration stall) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GoneLocked(int worker) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool AllFinishedLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Event(const std::string& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int server_index_;
  const int workers_;
  const bool evaluator_expected_;
  const ServerRules& rules_;  // borrowed

  mutable absl::Mutex mu_;
  std::vector<bool> finished_ ABSL_GUARDED_BY(mu_);
  std::vector<double> epoch_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> incarnation_ ABSL_GUARDED_BY(mu_);
  std::vector<Liveness> liveness_ ABSL_GUARDED_BY(mu_);
  absl::Time last_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool evaluator_finished_ ABSL_GUARDED_BY(mu_) = false;
  Liveness evaluator_ ABSL_GUARDED_BY(mu_){"evaluator"};
  absl::Time started_ ABSL_GUARDED_BY(mu_);
  absl::Status health_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_MEMBERSHIP_H_
