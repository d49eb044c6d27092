#include "launcher/simulation/step_timed_model.h"

#include <cmath>

#include "core/compute/kernel_math.h"

namespace monsoon {

double SimulatedStepSeconds(const JobConfig& config, double step_seconds, int worker,
                            int64_t step) {
  const SimulationConfig& m = config.simulation;
  if (m.step_distribution != StepDistribution::kLogNormal) return step_seconds;
  // A stream of its own, apart from the stragglers' (~seed) and the dropout masks' (seed).
  const uint64_t draw =
      SplitMix64(SplitMix64(config.seed ^ 0x51u, worker), static_cast<uint64_t>(step));
  const double z = std::sqrt(-2 * std::log(1 - UniformHash(draw, 0))) *
                   std::cos(2 * M_PI * UniformHash(draw, 1));
  return step_seconds * std::exp(m.step_sigma * z - m.step_sigma * m.step_sigma / 2);
}

BatchResult StepTimedModel::ComputeGradients(const float* x, const float* targets, int rows) {
  const BatchResult result = model_->ComputeGradients(x, targets, rows);
  clock_->SleepFor(absl::Seconds(SimulatedStepSeconds(config_, step_seconds_, worker_, step_)));
  return result;
}

}  // namespace monsoon
