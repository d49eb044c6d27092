// What each value of a model's state is (BatchNorm's running statistics, a PyTorch module's
// buffers), so that state a worker pushes can be checked against what it can be: a variance
// is finite and at least 0, a mean finite, both within a bound; a counter finite and at least
// 0; any other buffer finite.
#ifndef MONSOON_CORE_MODEL_STATE_LAYOUT_H_
#define MONSOON_CORE_MODEL_STATE_LAYOUT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/model/model.h"

namespace monsoon {

// A tensor's kind, from its name as PyTorch and Monsoon's own layers name them.
enum class StateKind {
  kMean,      // "...running_mean"
  kVariance,  // "...running_var"
  kCounter,   // "...num_batches_tracked"
  kValue,     // any other buffer
};

struct StateTensor {
  std::string name;
  size_t size = 0;
  StateKind kind = StateKind::kValue;
};

class StateLayout {
 public:
  // No names: every value is a kValue (finite is all that is checked).
  StateLayout() = default;
  // The state tensors in the flat layout's order; `bound`: the largest magnitude a mean or a
  // variance may have (model.state_bound).
  StateLayout(std::vector<StateTensor> tensors, double bound);

  // The state of the job's model: its layers' state tensors (Monsoon's models), or the
  // "buffer NAME (d0, d1)" lines of a worker program's manifest (RUN_DIR/initial_manifest;
  // none: no names).
  static StateLayout ForModel(const ModelSpec& spec, double bound,
                              const std::vector<std::string>& manifest = {});

  // OK when every value of `values`, the state's values from `first` on, is one its tensor can
  // hold; otherwise InvalidArgument naming the tensor, the element and the rule:
  // "model state 'bn0.running_var' holds -1 at its element 3: a variance is finite and at
  // least 0".
  absl::Status Check(size_t first, absl::Span<const float> values) const;

 private:
  std::vector<StateTensor> tensors_;
  double bound_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_MODEL_STATE_LAYOUT_H_
