#include "core/optimizer.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/multiversion.h"

namespace monsoon {

std::unique_ptr<Optimizer> Optimizer::Create(const OptimizerSpec& spec) {
  switch (spec.type) {
    case OptimizerType::kSgd:
      return std::make_unique<SgdOptimizer>(spec.learning_rate, spec.weight_decay);
    case OptimizerType::kMomentum:
      return std::make_unique<MomentumOptimizer>(spec.learning_rate, spec.momentum,
                                                 spec.weight_decay);
    case OptimizerType::kAdagrad:
      return std::make_unique<AdagradOptimizer>(spec.learning_rate, spec.epsilon,
                                                spec.initial_accumulator, spec.weight_decay);
    case OptimizerType::kAdam:
      return std::make_unique<AdamOptimizer>(spec.learning_rate, spec.beta1, spec.beta2,
                                             spec.epsilon, spec.weight_decay);
  }
  return nullptr;
}

float LearningRatePlan::Scale(double epoch) const {
  double scale = 1.0;
  if (schedule == LearningRateSchedule::kCosine) {
    scale = 0.5 * (1.0 + std::cos(M_PI * std::clamp(epoch / epochs, 0.0, 1.0)));
  }
  if (warmup_epochs > 0 && epoch < warmup_epochs) scale *= std::max(epoch, 0.0) / warmup_epochs;
  return static_cast<float>(scale);
}

namespace {

// The loops, outside the classes so that they can be multiversioned.
// Each loop decays the weights through the gradient it applies: gi = g[i] + wd * w[i].
MONSOON_MULTIVERSION void SgdLoop(float eta, float wd, const float* __restrict g,
                                  float* __restrict w, size_t n) {
  for (size_t i = 0; i < n; ++i) w[i] -= eta * (g[i] + wd * w[i]);
}

MONSOON_MULTIVERSION void MomentumLoop(float eta, float mu, float wd, const float* __restrict g,
                                       float* __restrict v, float* __restrict w, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] + (g[i] + wd * w[i]);
    w[i] -= eta * v[i];
  }
}

MONSOON_MULTIVERSION void AdagradLoop(float gamma, float eps, float wd, const float* __restrict g,
                                      float* __restrict a, float* __restrict w, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i] + wd * w[i];
    a[i] += gi * gi;
    w[i] -= gamma * gi / (std::sqrt(a[i]) + eps);
  }
}

MONSOON_MULTIVERSION void AdamLoop(float step_size, float inv_sqrt_c2, float b1, float b2,
                                   float eps, float wd, const float* __restrict g,
                                   float* __restrict m, float* __restrict v, float* __restrict w,
                                   size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float gi = g[i] + wd * w[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    w[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + eps);
  }
}

}  // namespace

void SgdOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                         absl::Span<float> /*state*/, uint64_t /*step*/, float rate_scale) const {
  SgdLoop(eta_ * rate_scale, wd_, g.data(), w.data(), w.size());
}

void MomentumOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                              absl::Span<float> state, uint64_t /*step*/, float rate_scale) const {
  MomentumLoop(eta_ * rate_scale, mu_, wd_, g.data(), state.data(), w.data(), w.size());
}

void AdagradOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                             absl::Span<float> state, uint64_t /*step*/, float rate_scale) const {
  AdagradLoop(gamma_ * rate_scale, eps_, wd_, g.data(), state.data(), w.data(), w.size());
}

void AdamOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g, absl::Span<float> state,
                          uint64_t step, float rate_scale) const {
  const size_t n = w.size();
  const double t = static_cast<double>(step);
  // Bias corrections folded into the step size and epsilon (Kingma & Ba, section 2).
  const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1_), t));
  const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2_), t));
  AdamLoop(eta_ * rate_scale / c1, 1.0f / std::sqrt(c2), beta1_, beta2_, eps_, wd_, g.data(),
           state.data(), state.data() + n, w.data(), n);
}

}  // namespace monsoon
