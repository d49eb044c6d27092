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
  }
  return nullptr;
}

void SgdOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                         absl::Span<float> /*state*/) const {
  float* __restrict wp = w.data();
  const float* __restrict gp = g.data();
  const float eta = eta_;
  for (size_t i = 0, n = w.size(); i < n; ++i) wp[i] -= eta * gp[i];
}

void MomentumOptimizer::Apply(absl::Span<float> w, absl::Span<const float> g,
                              absl::Span<float> state) const {
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
                             absl::Span<float> state) const {
  float* __restrict wp = w.data();
  float* __restrict ap = state.data();
  const float* __restrict gp = g.data();
  for (size_t i = 0, n = w.size(); i < n; ++i) {
    ap[i] += gp[i] * gp[i];
    wp[i] -= gamma_ * gp[i] / (std::sqrt(ap[i]) + eps_);
  }
}

absl::StatusOr<OptimizerType> ParseOptimizerType(const std::string& name) {
  if (name == "sgd") return OptimizerType::kSgd;
  if (name == "momentum") return OptimizerType::kMomentum;
  if (name == "adagrad") return OptimizerType::kAdagrad;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer '", name, "' (allowed: sgd, momentum, adagrad)"));
}

}  // namespace monsoon
