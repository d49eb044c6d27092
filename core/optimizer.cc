#include "core/optimizer.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace monsoon {

std::unique_ptr<Optimizer> Optimizer::Create(const OptimizerSpec& spec) {
  switch (spec.type) {
    case OptimizerType::kSgd:
      return std::make_unique<SgdOptimizer>(spec.learning_rate);
    case OptimizerType::kMomentum:
      return std::make_unique<MomentumOptimizer>(spec.learning_rate, spec.momentum);
    case OptimizerType::kAdagrad:
      return std::make_unique<AdagradOptimizer>(spec.learning_rate, spec.epsilon,
                                                spec.initial_accumulator);
    case OptimizerType::kAdam:
      return std::make_unique<AdamOptimizer>(spec.learning_rate, spec.beta1, spec.beta2,
                                             spec.epsilon);
  }
  return nullptr;
}

void SgdOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                         absl::Span<float> /*state*/, uint64_t /*step*/) const {
  float* __restrict wp = w.data();
  const float* __restrict gp = g.data();
  const float eta = eta_;
  for (size_t i = 0, n = w.size(); i < n; ++i) wp[i] -= eta * gp[i];
}

void MomentumOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                              absl::Span<float> state, uint64_t /*step*/) const {
  float* __restrict wp = w.data();
  float* __restrict vp = state.data();
  const float* __restrict gp = g.data();
  const float eta = eta_;
  const float mu = mu_;
  for (size_t i = 0, n = w.size(); i < n; ++i) {
    vp[i] = mu * vp[i] + gp[i];
    wp[i] -= eta * vp[i];
  }
}

void AdagradOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                             absl::Span<float> state, uint64_t /*step*/) const {
  float* __restrict wp = w.data();
  float* __restrict ap = state.data();
  const float* __restrict gp = g.data();
  for (size_t i = 0, n = w.size(); i < n; ++i) {
    ap[i] += gp[i] * gp[i];
    wp[i] -= gamma_ * gp[i] / (std::sqrt(ap[i]) + eps_);
  }
}

void AdamOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                          absl::Span<float> state, uint64_t step) const {
  const size_t n = w.size();
  float* __restrict wp = w.data();
  float* __restrict mp = state.data();
  float* __restrict vp = state.data() + n;
  const float* __restrict gp = g.data();
  const double t = static_cast<double>(step);
  // Bias corrections folded into the step size and epsilon (Kingma & Ba, section 2).
  const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1_), t));
  const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2_), t));
  const float step_size = eta_ / c1;
  const float inv_sqrt_c2 = 1.0f / std::sqrt(c2);
  const float b1 = beta1_, b2 = beta2_, eps = eps_;
  for (size_t i = 0; i < n; ++i) {
    mp[i] = b1 * mp[i] + (1.0f - b1) * gp[i];
    vp[i] = b2 * vp[i] + (1.0f - b2) * gp[i] * gp[i];
    wp[i] -= step_size * mp[i] / (std::sqrt(vp[i]) * inv_sqrt_c2 + eps);
  }
}

namespace {
constexpr OptimizerType kOptimizerTypes[] = {OptimizerType::kSgd, OptimizerType::kMomentum,
                                             OptimizerType::kAdagrad, OptimizerType::kAdam};
}  // namespace

const char* OptimizerName(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return "sgd";
    case OptimizerType::kMomentum:
      return "momentum";
    case OptimizerType::kAdagrad:
      return "adagrad";
    case OptimizerType::kAdam:
      return "adam";
  }
  return "";
}

absl::StatusOr<OptimizerType> ParseOptimizerType(const std::string& name) {
  for (OptimizerType t : kOptimizerTypes) {
    if (name == OptimizerName(t)) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer '", name, "' (allowed: sgd, momentum, adagrad, adam)"));
}

}  // namespace monsoon
