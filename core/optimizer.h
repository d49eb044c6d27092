// First-order optimizers applied to a span of parameters with a per-parameter state span.
// Used by servers (one call per chunk) and by workers for local steps.
#ifndef MONSOON_CORE_OPTIMIZER_H_
#define MONSOON_CORE_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/enum_names.h"

namespace monsoon {

enum class OptimizerType { kSgd, kMomentum, kAdagrad, kAdam };

// How a job's learning rates change over training: kConstant keeps them; kCosine anneals
// each from its configured value at epoch 0 to 0 at the job's last epoch.
enum class LearningRateSchedule { kConstant, kCosine };

// How a job's learning rates change over training (training.learning_rate_schedule and
// training.warmup_epochs), applied alike to the servers' optimizer and the workers' local steps.
struct LearningRatePlan {
  LearningRateSchedule schedule = LearningRateSchedule::kConstant;
  double epochs = 1;         // the job's length: kCosine reaches 0 there
  double warmup_epochs = 0;  // a linear ramp from 0 over these first epochs
  // The factor for a learning rate at `epoch` (a worker's progress, fractional): the schedule's
  // (1 for kConstant; 0.5 (1 + cos(pi epoch / epochs)) for kCosine, 0 from `epochs` on), times
  // epoch / warmup_epochs during the warm-up.
  float Scale(double epoch) const;
};

struct OptimizerSpec {
  OptimizerType type = OptimizerType::kSgd;
  float learning_rate = 0.01f;
  // L2 regularisation: every gradient g becomes g + weight_decay * w before the update (as
  // torch.optim's weight_decay).
  float weight_decay = 0.0f;
  float momentum = 0.9f;             // kMomentum
  // kMomentum under an asynchronous algorithm (downpour, ssp) with W workers: the servers use
  // max(0, momentum - (1 - 1/W)), taking off the momentum asynchrony itself adds (Mitliagkas et
  // al. 2016). EffectiveMomentum gives it.
  bool lower_momentum_with_workers = false;
  float epsilon = 1e-8f;             // kAdagrad
  float initial_accumulator = 0.0f;  // kAdagrad
  float beta1 = 0.9f;                // kAdam
  float beta2 = 0.999f;              // kAdam
};

// Stateless apart from the caller-owned state span; thread-compatible (const methods).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Floats of optimizer state per parameter (0, 1 or more).
  virtual int state_per_param() const = 0;
  // Initial value of every state float.
  virtual float initial_state() const { return 0.0f; }
  // Applies gradient g to weights w; state has w.size() * state_per_param() floats, laid
  // out as state_per_param() consecutive arrays of w.size(). `step` is 1 for the first update
  // these weights receive, 2 for the second, ... (Adam's bias correction uses it). The
  // update uses the learning rate times `rate_scale` (LearningRatePlan::Scale), on g plus the
  // weight decay times w.
  virtual void Apply(absl::Span<float> w, absl::Span<const float> g, absl::Span<float> state,
                     uint64_t step, float rate_scale) const = 0;

  static std::unique_ptr<Optimizer> Create(const OptimizerSpec& spec);
};

// In every optimizer below, g stands for the gradient plus wd * w (weight decay).

// w <- w - eta * g
class SgdOptimizer : public Optimizer {
 public:
  SgdOptimizer(float eta, float wd) : eta_(eta), wd_(wd) {}
  int state_per_param() const override { return 0; }
  void Apply(absl::Span<float> w, absl::Span<const float> g, absl::Span<float> state, uint64_t step,
             float rate_scale) const override;

 private:
  const float eta_;
  const float wd_;
};

// Heavy-ball momentum: v <- mu * v + g;  w <- w - eta * v
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(float eta, float mu, float wd) : eta_(eta), mu_(mu), wd_(wd) {}
  int state_per_param() const override { return 1; }
  void Apply(absl::Span<float> w, absl::Span<const float> g, absl::Span<float> state, uint64_t step,
             float rate_scale) const override;

 private:
  const float eta_;
  const float mu_;
  const float wd_;
};

// Per-coordinate Adagrad as in DistBelief: a_i <- a_i + g_i^2;  w_i <- w_i - gamma * g_i /
// (sqrt(a_i) + eps)
class AdagradOptimizer : public Optimizer {
 public:
  AdagradOptimizer(float gamma, float eps, float a0, float wd)
      : gamma_(gamma), eps_(eps), a0_(a0), wd_(wd) {}
  int state_per_param() const override { return 1; }
  float initial_state() const override { return a0_; }
  void Apply(absl::Span<float> w, absl::Span<const float> g, absl::Span<float> state, uint64_t step,
             float rate_scale) const override;

 private:
  const float gamma_;
  const float eps_;
  const float a0_;
  const float wd_;
};

// Adam (Kingma & Ba 2015): m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;
// w <- w - eta * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). State: m then v.
class AdamOptimizer : public Optimizer {
 public:
  AdamOptimizer(float eta, float beta1, float beta2, float eps, float wd)
      : eta_(eta), beta1_(beta1), beta2_(beta2), eps_(eps), wd_(wd) {}
  int state_per_param() const override { return 2; }
  void Apply(absl::Span<float> w, absl::Span<const float> g, absl::Span<float> state, uint64_t step,
             float rate_scale) const override;

 private:
  const float eta_;
  const float beta1_;
  const float beta2_;
  const float eps_;
  const float wd_;
};

inline constexpr NamedValue<OptimizerType> kOptimizerValues[] = {
    {OptimizerType::kSgd, "sgd"},
    {OptimizerType::kMomentum, "momentum"},
    {OptimizerType::kAdagrad, "adagrad"},
    {OptimizerType::kAdam, "adam"}};
inline constexpr EnumNames<OptimizerType> kOptimizerNames{"optimizer", kOptimizerValues};

inline constexpr NamedValue<LearningRateSchedule> kScheduleValues[] = {
    {LearningRateSchedule::kConstant, "constant"}, {LearningRateSchedule::kCosine, "cosine"}};
inline constexpr EnumNames<LearningRateSchedule> kScheduleNames{"learning-rate schedule",
                                                                kScheduleValues};

}  // namespace monsoon

#endif  // MONSOON_CORE_OPTIMIZER_H_
