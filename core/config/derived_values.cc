#include "core/config/derived_values.h"

#include <algorithm>
#include <cmath>

namespace monsoon {

bool PushesGradients(Algorithm a) { return a != Algorithm::kEasgd && a != Algorithm::kEamsgd; }

double ElasticAlpha(const EasgdConfig& easgd, int live_workers) {
  if (easgd.alpha > 0) return easgd.alpha;
  return std::min(1.0, easgd.beta / std::max(1, live_workers));
}

double ElasticAlphaBound(double eta) { return (4 - 2 * eta) / (4 - eta); }

bool OffersChunkWindow(const StalenessConfig& staleness) { return staleness.dc_lambda <= 0; }

bool StopsOnWorkerLoss(const JobConfig& config) {
  const WorkerLoss loss = config.reliability.worker_loss;
  if (loss != WorkerLoss::kAuto) return loss == WorkerLoss::kStop;
  return config.training.algorithm == Algorithm::kSync &&
         EffectiveQuorum(config) == config.cluster.pushing_clients();
}

int EffectiveQuorum(const JobConfig& config) {
  if (config.sync.quorum > 0) return config.sync.quorum;
  const int workers = config.cluster.pushing_clients();
  const int backups = static_cast<int>(std::ceil(config.sync.backup_fraction * workers - 1e-9));
  return std::max(1, workers - backups);
}

float EffectiveMomentum(const JobConfig& config) {
  const Algorithm a = config.training.algorithm;
  const float momentum = config.optimizer.momentum;
  if (!config.optimizer.lower_momentum_with_workers ||
      (a != Algorithm::kDownpour && a != Algorithm::kSsp)) {
    return momentum;
  }
  return std::max(0.0f, momentum - (1.0f - 1.0f / config.cluster.pushing_clients()));
}

absl::StatusOr<ShardingPlan> JobShardingPlan(const JobConfig& config) {
  return ShardingPlan::Create(Model::NumParams(config.model), config.cluster.servers,
                              config.chunk_floats(), Model::NumState(config.model));
}

double BaseLearningRate(const JobConfig& config) {
  return PushesGradients(config.training.algorithm) ? config.optimizer.learning_rate
                                                    : config.easgd.learning_rate;
}

LearningRatePlan LearningRatePlanOf(const JobConfig& config) {
  return {config.training.learning_rate_schedule, static_cast<double>(config.training.epochs),
          config.training.warmup_epochs};
}

}  // namespace monsoon
