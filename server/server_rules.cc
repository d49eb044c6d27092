#include "server/server_rules.h"

#include "core/config/derived_values.h"

namespace monsoon {

ServerRules ServerRules::FromConfig(const JobConfig& config) {
  ServerRules rules;
  rules.algorithm = config.training.algorithm;
  rules.optimizer = config.optimizer;
  rules.optimizer.momentum = EffectiveMomentum(config);
  rules.staleness = config.staleness;
  rules.sync = config.sync;
  // 0 stays 0: every live worker, however many remain.
  if (config.sync.backup_fraction > 0) rules.sync.quorum = EffectiveQuorum(config);
  rules.easgd = config.easgd;
  rules.learning_rate = LearningRatePlanOf(config);
  rules.peer_timeout = absl::Seconds(config.reliability.peer_timeout_seconds);
  rules.join_timeout = absl::Seconds(config.reliability.join_timeout_seconds);
  rules.stop_on_worker_loss = StopsOnWorkerLoss(config);
  rules.state = StateLayout::ForModel(config.model, config.model.state_bound);
  return rules;
}

}  // namespace monsoon
