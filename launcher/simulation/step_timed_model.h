// A simulated worker's model: the job's real model, whose every ComputeGradients also lets the
// step's simulated compute time pass on the worker's clock (SimulatedClock::SleepFor). The
// gradients are computed for real; only their time is modelled.
#ifndef MONSOON_LAUNCHER_SIMULATION_STEP_TIMED_MODEL_H_
#define MONSOON_LAUNCHER_SIMULATION_STEP_TIMED_MODEL_H_

#include <string>

#include "core/clock.h"
#include "core/config/job_config.h"
#include "core/model/trainable_model.h"

namespace monsoon {

// Simulated seconds of step `step` of worker `worker`: `step_seconds`, times a log-normal
// factor of mean 1 drawn from (seed, worker, step) under simulation.step_distribution:
// lognormal. The job's stragglers add their delays to it in TrainingWorker, as for real.
double SimulatedStepSeconds(const JobConfig& config, double step_seconds, int worker, int64_t step);

class StepTimedModel final : public TrainableModel {
 public:
  // Borrows `model`, `config` and `clock`.
  StepTimedModel(TrainableModel* model, const JobConfig& config, double step_seconds, int worker,
                 const Clock* clock)
      : model_(model),
        config_(config),
        step_seconds_(step_seconds),
        worker_(worker),
        clock_(clock) {}

  BatchResult ComputeGradients(const float* x, const float* targets, int rows) override;
  void set_steps_done(int64_t steps) override {
    step_ = steps;
    model_->set_steps_done(steps);
  }

  size_t num_params() const override { return model_->num_params(); }
  size_t num_state() const override { return model_->num_state(); }
  std::string where() const override { return model_->where() + ", simulated time"; }
  void SetParams(const float* host) override { model_->SetParams(host); }
  void GetParams(float* host) override { model_->GetParams(host); }
  size_t GetGrads(float* host) override { return model_->GetGrads(host); }
  void StreamGradientsTo(float* host) override { model_->StreamGradientsTo(host); }
  HostPin PinHostMemory(absl::Span<float> host) override { return model_->PinHostMemory(host); }
  void AddWeightDecay(float weight_decay) override { model_->AddWeightDecay(weight_decay); }
  void ApplyLocalSgd(float rate) override { model_->ApplyLocalSgd(rate); }
  void ApplyLocalNesterov(float rate, float momentum) override {
    model_->ApplyLocalNesterov(rate, momentum);
  }
  void GetVelocity(float* host) override { model_->GetVelocity(host); }
  void AddToParams(const float* delta, float scale) override { model_->AddToParams(delta, scale); }
  absl::Status Synchronize() override { return model_->Synchronize(); }
  BatchResult Evaluate(const float* x, const float* targets, int rows) override {
    return model_->Evaluate(x, targets, rows);
  }
  void set_batch_seed(uint64_t seed) override { model_->set_batch_seed(seed); }

 private:
  TrainableModel* const model_;
  const JobConfig& config_;
  const double step_seconds_;
  const int worker_;
  const Clock* const clock_;
  int64_t step_ = 0;  // set_steps_done's
};

}  // namespace monsoon

#endif  // MONSOON_LAUNCHER_SIMULATION_STEP_TIMED_MODEL_H_
