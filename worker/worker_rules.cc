#include "worker/worker_rules.h"

#include <algorithm>
#include <cmath>

#include "core/compute/kernel_math.h"
#include "core/config/derived_values.h"

namespace monsoon {

WorkerRules WorkerRules::FromConfig(const JobConfig& config) {
  WorkerRules rules;
  rules.algorithm = config.training.algorithm;
  if (rules.algorithm == Algorithm::kDownpour) {
    rules.n_fetch = config.downpour.n_fetch;
    rules.n_push = config.downpour.n_push;
    rules.warm_start_steps = config.downpour.warm_start_steps;
    rules.local_learning_rate = static_cast<float>(config.downpour.local_learning_rate);
    rules.pull_with_push = config.transport.pull_with_push;
  } else {
    rules.pull_with_push = false;
  }
  rules.ssp_bound = config.ssp.bound;
  rules.easgd = config.easgd;
  rules.overlap = config.transport.overlap;
  rules.compression = config.transport.compression;
  rules.topk_fraction = config.transport.topk_fraction;
  rules.epochs = config.training.epochs;
  rules.batch_size = config.training.batch_size;
  rules.max_steps = config.training.max_steps;
  rules.learning_rate = LearningRatePlanOf(config);
  rules.base_learning_rate = BaseLearningRate(config);
  rules.weight_decay = config.optimizer.weight_decay;
  rules.trace_steps = config.trace.steps;
  rules.seed = config.seed;
  rules.stragglers = config.stragglers;
  rules.stall_seconds = config.reliability.stall_seconds;
  rules.first_step_seconds = config.reliability.first_step_seconds;
  rules.model_data_bytes = static_cast<size_t>(config.compute.gpu_data_mib) << 20;
  return rules;
}

double StragglerDelaySeconds(const StragglersConfig& s, uint64_t seed, int worker, int64_t step,
                             double compute_seconds) {
  double delay = 0;
  if (std::find(s.slow_workers.begin(), s.slow_workers.end(), worker) != s.slow_workers.end()) {
    delay += (s.slow_factor - 1) * compute_seconds;
  }
  // A stream of its own, apart from the dropout masks' (seed, worker, step).
  const uint64_t draw = SplitMix64(SplitMix64(~seed, worker), static_cast<uint64_t>(step));
  if (s.probability > 0 && UniformHash(draw, 0) < s.probability) {
    const double mean = s.delay_ms / 1e3;
    delay += s.distribution == DelayDistribution::kFixed
                 ? mean
                 : -mean * std::log(1.0 - UniformHash(draw, 1));
  }
  return delay;
}

}  // namespace monsoon
