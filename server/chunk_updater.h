// How a chunk takes what workers send, per algorithm, chosen once when the server is built:
// - AsyncUpdater (downpour, ssp): each gradient at once, weighted by the staleness policy and
//   delay-compensated with DC-ASGD;
// - SyncUpdater (sync): gradients gathered into rounds, each applied as one mean;
// - ElasticUpdater (easgd, eamsgd): the elastic exchange with the centre.
// A state chunk (Chunk::state) takes the workers' values by the state rule instead of the
// optimizer. The equations are in update_rule.h.
#ifndef MONSOON_SERVER_CHUNK_UPDATER_H_
#define MONSOON_SERVER_CHUNK_UPDATER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/optimizer.h"
#include "server/chunk_state.h"
#include "server/membership.h"
#include "server/server_rules.h"

namespace monsoon {

// Thread-compatible: every call holds the chunk's lock.
class ChunkUpdater {
 public:
  // `rules` and `membership` are borrowed.
  static std::unique_ptr<ChunkUpdater> Create(const ServerRules& rules,
                                              const Membership* membership);
  virtual ~ChunkUpdater() = default;

  // Sizes a new chunk's optimizer state, sync round and DC-ASGD copies.
  virtual void Init(ChunkState* chunk) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Takes gradient g of `worker`, computed `staleness` versions ago; returns whether it was
  // applied (or counted into a round). FailedPrecondition when the algorithm takes no
  // gradients, or the worker already pushed into the current round.
  virtual absl::StatusOr<bool> OnPush(ChunkState* chunk, int worker, uint64_t staleness,
                                      absl::Span<const float> g, const PushOrigin& origin) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // The elastic exchange with force `alpha`: the centre moves by d = alpha (x - centre), which
  // goes to `difference`. FailedPrecondition when the algorithm takes gradients.
  virtual absl::Status OnExchange(ChunkState* chunk, float alpha, absl::Span<const float> x,
                                  absl::Span<float> difference) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // A worker left or came back: a synchronous round may now be complete.
  virtual void OnLiveWorkersChanged(ChunkState* chunk) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {}
  // Whether a pull may follow a push in one call (Downpour: its pulls never wait).
  bool PullMayFollowPush() const { return rules_.algorithm == Algorithm::kDownpour; }

 protected:
  ChunkUpdater(const ServerRules& rules, const Membership* membership);
  // Applies the optimizer with g, computed at `epoch` of its worker's progress (the
  // learning-rate schedule's input), and bumps the version.
  void Apply(ChunkState* chunk, absl::Span<const float> g, double epoch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);
  // Moves a state chunk towards `pushed` by `share` (MoveStateTowards) and bumps the version.
  void MoveState(ChunkState* chunk, absl::Span<const float> pushed, float share) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu);

  const ServerRules& rules_;
  const Membership* const membership_;
  const std::unique_ptr<Optimizer> optimizer_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_CHUNK_UPDATER_H_
