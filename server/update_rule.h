// The server-side update rule: how a pushed gradient changes a chunk. A plug-in, so that
// Downpour, EASGD, synchronous and SSP rules share one store and one transport.
#ifndef MONSOON_SERVER_UPDATE_RULE_H_
#define MONSOON_SERVER_UPDATE_RULE_H_

#include <memory>

#include "absl/types/span.h"
#include "core/optimizer.h"

namespace monsoon {

// Called with the chunk's lock held; implementations must be thread-compatible across
// chunks (no shared mutable state).
class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // Floats of per-parameter state the rule keeps beside each chunk, and their initial value.
  virtual int state_per_param() const = 0;
  virtual float initial_state() const = 0;
  // Applies one push's gradient g to the chunk's values w (state: w.size() * state_per_param()).
  virtual void ApplyPush(absl::Span<float> w, absl::Span<const float> g,
                         absl::Span<float> state) const = 0;
};

// Downpour-SGD (Dean et al. 2012): every push is applied at once, in arrival order, by the
// server's optimizer: SGD (w -= eta g), momentum (v = mu v + g; w -= eta v) or per-coordinate
// Adagrad (a += g^2; w -= gamma g / (sqrt(a) + eps)).
class DownpourRule : public UpdateRule {
 public:
  explicit DownpourRule(const OptimizerSpec& spec) : optimizer_(Optimizer::Create(spec)) {}
  int state_per_param() const override { return optimizer_->state_per_param(); }
  float initial_state() const override { return optimizer_->initial_state(); }
  void ApplyPush(absl::Span<float> w, absl::Span<const float> g,
                 absl::Span<float> state) const override {
    optimizer_->Apply(w, g, state);
  }

 private:
  const std::unique_ptr<Optimizer> optimizer_;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_UPDATE_RULE_H_
