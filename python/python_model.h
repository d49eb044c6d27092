// A model written in Python, as the worker and evaluator roles drive it (TrainableModel).
#ifndef MONSOON_PYTHON_PYTHON_MODEL_H_
#define MONSOON_PYTHON_PYTHON_MODEL_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/compute/kernel_math.h"
#include "core/finite.h"
#include "core/model/trainable_model.h"
#include "python/errors.h"

namespace monsoon {

namespace py = pybind11;

// A model written in Python: an object with `params` and `grads` (float32 NumPy arrays of one
// length, which stay the same arrays), optionally `num_state` (how many of the last values are
// state, TrainableModel::num_state; 0 when absent), and the methods
// compute_gradients(x, y, seed) -> the batch's summed loss, after writing the batch-mean loss
// gradient into `grads` (and the state's current values into both arrays' state); and
// evaluate(x, y) -> (summed loss, correct predictions); optionally score() -> (mean loss,
// accuracy) of its parameters on data of its own (ScoreItself). With `own_loop` true the model is
// trained by its user's loop (TrainableModel::trained_by_own_loop): compute_gradients then
// returns that loop's gradient, or None once the loop has ended, and the object's `steps_done`
// is set to the worker's steps before it. x is [rows, features] and y [rows] or
// [rows, targets], both float32 and valid only during the call. Borrows the object, which its
// caller keeps alive. A Python exception ends the role: it goes to *raised (which the caller
// owns and clears with the GIL held), and the model's status says what was raised.
class PythonModel : public TrainableModel {
 public:
  PythonModel(py::handle model, std::string where, std::optional<py::error_already_set>* raised)
      : model_(model), where_(std::move(where)), raised_(raised) {
    size_t grads_size = 0;
    params_ = FloatData(model.attr("params"), "model.params", &n_);
    grads_ = FloatData(model.attr("grads"), "model.grads", &grads_size);
    if (grads_size != n_) {
      throw py::value_error(
          absl::StrCat("model.grads has ", grads_size, " values but model.params ", n_));
    }
    if (py::hasattr(model, "num_state")) state_ = model.attr("num_state").cast<size_t>();
    if (py::hasattr(model, "own_loop")) own_loop_ = model.attr("own_loop").cast<bool>();
    if (state_ >= n_) {
      throw py::value_error(absl::StrCat("model.num_state is ", state_, " of ", n_,
                                         " values: no trained parameters left"));
    }
  }

  size_t num_params() const override { return n_; }
  size_t num_state() const override { return state_; }
  std::string where() const override { return where_; }
  void SetParams(const float* host) override { Copy(host, params_); }
  void GetParams(float* host) override { Copy(params_, host); }
  size_t GetGrads(float* host) override {
    return status_.ok() ? CopyFindingNonFinite(grads_, host, n_) : n_;
  }
  // The local steps (none where the user's loop takes its own).
  void AddWeightDecay(float weight_decay) override {
    if (weight_decay > 0 && !own_loop_) Axpy(weight_decay, params_, grads_, n_ - state_);
  }
  void ApplyLocalSgd(float learning_rate) override {
    if (!own_loop_) Axpy(-learning_rate, grads_, params_, n_ - state_);
  }
  void ApplyLocalNesterov(float learning_rate, float momentum) override {
    velocity_.resize(n_);
    for (size_t i = 0; i < (own_loop_ ? 0 : n_ - state_); ++i) {
      NesterovElement(learning_rate, momentum, grads_[i], &velocity_[i], &params_[i]);
    }
  }
  void GetVelocity(float* host) override {
    velocity_.resize(n_);
    Copy(velocity_.data(), host);
  }
  void AddToParams(const float* delta_host, float scale) override {
    Axpy(scale, delta_host, params_, n_);
  }
  absl::Status Synchronize() override { return status_; }
  void set_batch_seed(uint64_t seed) override { seed_ = seed; }
  bool trained_by_own_loop() const override { return own_loop_; }
  void set_steps_done(int64_t steps) override { steps_done_ = steps; }
  bool loop_ended() const override { return ended_; }

  BatchResult ComputeGradients(const float* x, const float* y, int rows) override {
    BatchResult result{0, 0, rows};
    Call([&] {
      if (own_loop_) model_.attr("steps_done") = steps_done_;
      const py::object loss_sum =
          model_.attr("compute_gradients")(View(x, rows, true), View(y, rows, false), seed_);
      ended_ = own_loop_ && loss_sum.is_none();
      if (!ended_) result.loss_sum = loss_sum.cast<double>();
    });
    if (ended_) return result;
    // The gradient; the state after it is checked by its tensors' kinds (StateLayout).
    if (status_.ok()) status_ = CheckFinite("the model's gradient", {grads_, n_ - state_});
    return result;
  }
  BatchResult Evaluate(const float* x, const float* y, int rows) override {
    BatchResult result{0, 0, rows};
    Call([&] {
      auto [loss_sum, correct] = model_.attr("evaluate")(View(x, rows, true), View(y, rows, false))
                                     .cast<std::pair<double, int>>();
      result.loss_sum = loss_sum;
      result.correct = correct;
    });
    return result;
  }

  absl::StatusOr<TestScore> ScoreItself() override {
    TestScore score;
    bool scores = false;
    Call([&] {
      scores = py::hasattr(model_, "score");
      if (!scores) return;
      std::tie(score.loss, score.accuracy) =
          model_.attr("score")().cast<std::pair<double, double>>();
    });
    if (!status_.ok()) return status_;
    if (!scores) {
      return absl::FailedPreconditionError(
          "evaluation.by_program is true but the worker program has no evaluation function: "
          "pass one to monsoon.torch.init(module, evaluate=...)");
    }
    return score;
  }

  // The batch's shape per example: features, and targets (0: one class id per example).
  void set_widths(int features, int targets) {
    features_ = features;
    targets_ = targets;
  }

 private:
  void Copy(const float* from, float* to) const {
    if (status_.ok()) std::memcpy(to, from, n_ * sizeof(float));
  }
  // y += alpha * x over the first n values.
  void Axpy(float alpha, const float* x, float* y, size_t n) const {
    if (!status_.ok()) return;
    for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  }
  // A NumPy view of the batch's features or targets (no copy).
  py::array View(const float* data, int rows, bool features) const {
    std::vector<py::ssize_t> shape = {rows};
    const int width = features ? features_ : targets_;
    if (features || width > 0) shape.push_back(width);
    return py::array(py::dtype::of<float>(), shape, data, py::none());
  }
  // Runs `body` with the GIL held, unless an earlier call failed; keeps what it raises.
  template <class Body>
  void Call(Body body) {
    if (!status_.ok()) return;
    py::gil_scoped_acquire gil;
    try {
      body();
    } catch (py::error_already_set& e) {
      status_ = absl::InternalError(absl::StrCat("the model raised ", e.what()));
      *raised_ = std::move(e);
    } catch (const std::exception& e) {
      status_ = absl::InternalError(absl::StrCat("the model's result: ", e.what()));
    }
  }

  const py::handle model_;  // borrowed
  const std::string where_;
  float* params_ = nullptr;  // the model's arrays
  float* grads_ = nullptr;
  size_t n_ = 0;
  size_t state_ = 0;
  bool own_loop_ = false;
  bool ended_ = false;
  int64_t steps_done_ = 0;
  std::vector<float> velocity_;
  uint64_t seed_ = 0;
  int features_ = 0, targets_ = 0;
  absl::Status status_;
  std::optional<py::error_already_set>* const raised_;
};

}  // namespace monsoon

#endif  // MONSOON_PYTHON_PYTHON_MODEL_H_
