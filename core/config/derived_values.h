// Values a job's roles compute from several of its fields, each in one place so that every
// role agrees on them.
#ifndef MONSOON_CORE_CONFIG_DERIVED_VALUES_H_
#define MONSOON_CORE_CONFIG_DERIVED_VALUES_H_

#include "absl/status/statusor.h"
#include "core/config/job_config.h"
#include "core/optimizer.h"
#include "core/sharding_plan.h"

namespace monsoon {

// True for the algorithms whose workers push gradients (downpour, sync, ssp); false for the
// elastic ones (easgd, eamsgd), whose workers exchange weights with the centre.
bool PushesGradients(Algorithm a);

// The elastic force for `live_workers` workers: easgd.alpha, or easgd.beta / live_workers,
// capped at 1.
double ElasticAlpha(const EasgdConfig& easgd, int live_workers);
// The paper's stability bound on alpha for local step size eta: (4 - 2 eta) / (4 - eta).
double ElasticAlphaBound(double eta);

// True when servers publish their chunks in a chunk window for the clients on their host:
// not with DC-ASGD's delay compensation, whose servers must see each worker's pull.
bool OffersChunkWindow(const StalenessConfig& staleness);

// True when the servers stop the job on losing a worker (reliability.worker_loss resolved).
bool StopsOnWorkerLoss(const JobConfig& config);

// The servers' momentum: optimizer.momentum, lowered by 1 - 1/workers (not below 0) under
// optimizer.lower_momentum_with_workers for the asynchronous algorithms (downpour, ssp).
float EffectiveMomentum(const JobConfig& config);
// K, the gradients a sync round waits for: sync.quorum, else the workers less
// ceil(sync.backup_fraction * workers) backups (at least 1).
int EffectiveQuorum(const JobConfig& config);

// The job's learning-rate schedule and warm-up, for servers and workers alike.
LearningRatePlan LearningRatePlanOf(const JobConfig& config);

// The learning rate, before the schedule and warm-up (LearningRatePlanOf), of the update a
// worker's step feeds: the servers' optimizer's for the algorithms that push gradients, the
// workers' elastic step's (easgd.learning_rate) for EASGD and EAMSGD.
double BaseLearningRate(const JobConfig& config);

// The sharding plan of this job's model over its servers. Every role computes it with this
// function, so they agree on it (the servers check the fingerprint).
absl::StatusOr<ShardingPlan> JobShardingPlan(const JobConfig& config);

}  // namespace monsoon

#endif  // MONSOON_CORE_CONFIG_DERIVED_VALUES_H_
