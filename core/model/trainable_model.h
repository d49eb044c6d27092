// What a worker trains and an evaluator scores: a model over one flat float32 vector (the
// layout the sharding plan cuts), with its gradient and the local update steps the algorithms
// take. The vector's last num_state() values are the model's state (BatchNorm's running
// statistics, a PyTorch module's buffers): training changes them without a gradient; the
// servers hold them like weights but combine what workers send by ServerRules' state rule. Implemented by Model (Monsoon's layer-list models on a ComputeBackend) and
// by the Python module's model (a PyTorch or NumPy model in a worker program).
#ifndef MONSOON_CORE_MODEL_TRAINABLE_MODEL_H_
#define MONSOON_CORE_MODEL_TRAINABLE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/compute/compute_backend.h"

namespace monsoon {

// Result of one forward (and possibly backward) pass over a batch.
struct BatchResult {
  double loss_sum = 0;  // summed over the batch's rows
  int correct = 0;      // classification only
  int rows = 0;
};

// A model's score on a test set.
struct TestScore {
  double loss = 0;      // mean over the examples
  double accuracy = 0;  // classification only
};

// Not thread-safe. A model may run its work asynchronously and record its first error instead
// of failing a call: after an error every method is a no-op, and Synchronize() returns it.
class TrainableModel {
 public:
  virtual ~TrainableModel() = default;

  // Length of the flat vector, state included.
  virtual size_t num_params() const = 0;
  // Length of the state at its end.
  virtual size_t num_state() const = 0;
  // Where it computes, for logs: "cpu", "cuda:0 (NVIDIA H100 80GB HBM3)", "python3 train.py".
  virtual std::string where() const = 0;

  virtual void SetParams(const float* host) = 0;
  virtual void GetParams(float* host) = 0;
  // The gradient of the trained values, followed by the state's current values: what a worker
  // pushes. Returns the index of the first NaN or infinity written (num_params() when none),
  // found by the pass that writes `host`.
  virtual size_t GetGrads(float* host) = 0;
  // A hint that the next GetGrads writes `host` (nullptr: no hint): a GPU model may start
  // copying each layer's gradient there while backward still runs. `host` must then not be
  // read or written until that GetGrads.
  virtual void StreamGradientsTo(float* /*host*/) {}
  // Page-locks `host` for this model's copies while the pin lives (see HostPin in
  // core/compute/compute_backend.h); an empty pin where that buys nothing.
  virtual HostPin PinHostMemory(absl::Span<float> /*host*/) { return HostPin(); }
  // The local steps change only the trained values, never the state.
  // grads += weight_decay * params: L2 weight decay before a local step.
  virtual void AddWeightDecay(float weight_decay) = 0;
  // params -= learning_rate * grads (a worker's local SGD step).
  virtual void ApplyLocalSgd(float learning_rate) = 0;
  // A local Nesterov momentum step with the model's velocity (zero at first); params then hold
  // the look-ahead point x + momentum * velocity (NesterovElement, core/compute/kernel_math.h).
  virtual void ApplyLocalNesterov(float learning_rate, float momentum) = 0;
  // The velocity of ApplyLocalNesterov (zeros before the first step).
  virtual void GetVelocity(float* host) = 0;
  // params += scale * delta_host.
  virtual void AddToParams(const float* delta_host, float scale) = 0;
  // Waits for queued work; the model's first error, if any.
  virtual absl::Status Synchronize() = 0;

  // Forward + backward on x_host [rows x features], targets_host [rows] (class ids) or
  // [rows x targets] (regression). Overwrites grads with the batch-mean loss gradient.
  virtual BatchResult ComputeGradients(const float* x_host, const float* targets_host,
                                       int rows) = 0;
  // Whether PrefetchBatch buys anything: the model uploads each batch to memory of its own.
  virtual bool prefetches_batches() const { return false; }
  // A hint that the ComputeGradients after the next one takes x_host [rows x features] and
  // targets_host: the next ComputeGradients may upload them while it computes. Neither may be
  // written until the ComputeGradients that takes them returns.
  virtual void PrefetchBatch(const float* /*x_host*/, const float* /*targets_host*/, int /*rows*/) {
  }
  // Keeps a copy of a shard's rows (features [n x input dim], targets) in the model's own
  // memory where that is apart from the host's (a GPU's) and the copy takes at most
  // `budget_bytes`, so that ComputeGradientsOnHeld takes its batches from there instead of
  // uploading them; returns whether it does (false: nothing held).
  virtual bool HoldRows(absl::Span<const float> /*features*/, absl::Span<const float> /*targets*/,
                        size_t /*budget_bytes*/) {
    return false;
  }
  // ComputeGradients on the held rows numbered `rows`, in that order. REQUIRES: HoldRows
  // returned true.
  virtual BatchResult ComputeGradientsOnHeld(absl::Span<const uint32_t> /*rows*/) { return {}; }
  // Forward only; loss and accuracy of the batch (no dropout).
  virtual BatchResult Evaluate(const float* x_host, const float* targets_host, int rows) = 0;
  // The score of the current parameters by the model's own evaluation function, on data of
  // its own (evaluation.by_program); FailedPrecondition for a model without one.
  virtual absl::StatusOr<TestScore> ScoreItself() {
    return absl::FailedPreconditionError("this model has no evaluation function of its own");
  }
  // The random seed of the next ComputeGradients' random choices (dropout); a worker sets one
  // per step, so that a replayed step draws the same.
  virtual void set_batch_seed(uint64_t seed) = 0;

  // A model trained by its user's own loop (monsoon.torch.DistributedOptimizer): each
  // ComputeGradients waits for that loop's next gradient, from its own batches, and ignores
  // the worker's; the loop's optimizer takes the local steps, so the model's own do nothing.
  // The loop, not training.epochs, ends training: loop_ended() turns true (from a
  // ComputeGradients that then computed nothing) once it has.
  virtual bool trained_by_own_loop() const { return false; }
  virtual bool loop_ended() const { return false; }
  // The worker's steps before the next ComputeGradients (a restarted worker's count on from
  // where the servers last heard from it), so that an own loop can resume its data there.
  virtual void set_steps_done(int64_t /*steps*/) {}
};

}  // namespace monsoon

#endif  // MONSOON_CORE_MODEL_TRAINABLE_MODEL_H_
