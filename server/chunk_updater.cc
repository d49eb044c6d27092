#include "server/chunk_updater.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/update_rule.h"

namespace monsoon {
namespace {

class AsyncUpdater : public ChunkUpdater {
 public:
  using ChunkUpdater::ChunkUpdater;

  void Init(ChunkState* chunk) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {
    ChunkUpdater::Init(chunk);
    if (rules_.staleness.dc_lambda > 0) chunk->pulled.assign(membership_->workers(), chunk->values);
  }

  absl::StatusOr<bool> OnPush(ChunkState* chunk, int worker, uint64_t staleness,
                              absl::Span<const float> g, const PushOrigin& origin) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {
    const float weight = StalenessWeight(rules_.staleness, staleness);
    const bool compensate = !chunk->pulled.empty();
    if (chunk->meta.state) {
      if (weight > 0) MoveState(chunk, g, weight / static_cast<float>(membership_->workers()));
    } else if (weight == 1.0f && !compensate) {
      Apply(chunk, g, origin.epoch);
    } else if (weight > 0) {
      // Per-thread scratch: gRPC's threads each keep one buffer of the largest chunk.
      thread_local std::vector<float> adjusted;
      adjusted.resize(g.size());
      if (compensate) {
        CompensateDelay(static_cast<float>(rules_.staleness.dc_lambda), g, *chunk->values,
                        *chunk->pulled[worker], absl::MakeSpan(adjusted));
      } else {
        std::copy(g.begin(), g.end(), adjusted.begin());
      }
      if (weight != 1.0f) {
        for (float& v : adjusted) v *= weight;
      }
      Apply(chunk, adjusted, origin.epoch);
    }
    return weight > 0;
  }
};

class SyncUpdater : public ChunkUpdater {
 public:
  using ChunkUpdater::ChunkUpdater;

  void Init(ChunkState* chunk) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {
    ChunkUpdater::Init(chunk);
    chunk->round.Allocate(chunk->meta.size, membership_->workers());
  }

  absl::StatusOr<bool> OnPush(ChunkState* chunk, int worker, uint64_t staleness,
                              absl::Span<const float> g, const PushOrigin& origin) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {
    SyncRound& round = chunk->round;
    if (staleness == 0) {
      if (round.from[worker]) {
        return absl::FailedPreconditionError(absl::StrCat("worker ", worker,
                                                          " already pushed chunk ", chunk->meta.id,
                                                          " for round ", chunk->version));
      }
      round.from[worker] = true;
      ++round.fresh;
    }
    const float weight = SyncGradientWeight(rules_.sync, staleness);
    if (weight > 0) round.Add(g, weight, origin.epoch);
    OnLiveWorkersChanged(chunk);  // closes the round when it is complete
    return weight > 0;
  }

  // Closes the round with `quorum` fresh gradients, or once every live worker has sent one (a
  // worker that has finished still counts in the round it contributed to).
  void OnLiveWorkersChanged(ChunkState* chunk) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {
    SyncRound& round = chunk->round;
    if (round.fresh == 0) return;
    const int quorum = rules_.sync.quorum > 0 ? rules_.sync.quorum : membership_->workers();
    if (round.fresh < quorum && !membership_->EveryLiveWorkerIn(round.from)) return;
    round.Close([&](absl::Span<const float> mean, double epoch) {
      if (chunk->meta.state) {
        MoveState(chunk, mean, 1.0f);
      } else {
        Apply(chunk, mean, epoch);
      }
    });
  }
};

class ElasticUpdater : public ChunkUpdater {
 public:
  using ChunkUpdater::ChunkUpdater;

  void Init(ChunkState* chunk) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {}

  absl::Status OnExchange(ChunkState* chunk, float alpha, absl::Span<const float> x,
                          absl::Span<float> difference) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(chunk->mu) {
    ElasticExchange(alpha, chunk->Writable(), x, difference);
    ++chunk->version;
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<ChunkUpdater> ChunkUpdater::Create(const ServerRules& rules,
                                                   const Membership* membership) {
  switch (rules.algorithm) {
    case Algorithm::kSync:
      return std::unique_ptr<ChunkUpdater>(new SyncUpdater(rules, membership));
    case Algorithm::kEasgd:
    case Algorithm::kEamsgd:
      return std::unique_ptr<ChunkUpdater>(new ElasticUpdater(rules, membership));
    case Algorithm::kDownpour:
    case Algorithm::kSsp:
      break;
  }
  return std::unique_ptr<ChunkUpdater>(new AsyncUpdater(rules, membership));
}

ChunkUpdater::ChunkUpdater(const ServerRules& rules, const Membership* membership)
    : rules_(rules), membership_(membership), optimizer_(Optimizer::Create(rules.optimizer)) {}

void ChunkUpdater::Init(ChunkState* chunk) const {
  chunk->optimizer_state.assign(chunk->meta.size * optimizer_->state_per_param(),
                                optimizer_->initial_state());
}

absl::StatusOr<bool> ChunkUpdater::OnPush(ChunkState*, int, uint64_t, absl::Span<const float>,
                                          const PushOrigin&) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "this job runs ", kAlgorithmNames.Name(rules_.algorithm), ": it takes no gradients"));
}

absl::Status ChunkUpdater::OnExchange(ChunkState*, float, absl::Span<const float>,
                                      absl::Span<float>) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "this job runs ", kAlgorithmNames.Name(rules_.algorithm), ": it exchanges no weights"));
}

void ChunkUpdater::Apply(ChunkState* chunk, absl::Span<const float> g, double epoch) const {
  optimizer_->Apply(chunk->Writable(), g, absl::MakeSpan(chunk->optimizer_state),
                    chunk->version + 1, rules_.learning_rate.Scale(epoch));
  ++chunk->version;
}

void ChunkUpdater::MoveState(ChunkState* chunk, absl::Span<const float> pushed,
                             float share) const {
  MoveStateTowards(share, chunk->Writable(), pushed);
  ++chunk->version;
}

}  // namespace monsoon
