#include "core/model/state_layout.h"

#include <cmath>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace monsoon {
namespace {

StateKind KindOf(absl::string_view name) {
  if (absl::EndsWith(name, "running_mean")) return StateKind::kMean;
  if (absl::EndsWith(name, "running_var")) return StateKind::kVariance;
  if (absl::EndsWith(name, "num_batches_tracked")) return StateKind::kCounter;
  return StateKind::kValue;
}

// A manifest line of a buffer, "buffer NAME (d0, d1, ...)", as a tensor; nullopt for other
// lines (trained parameters) and lines that do not parse.
std::optional<StateTensor> BufferOf(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "buffer ")) return std::nullopt;
  const size_t open = line.rfind(" (");
  if (open == absl::string_view::npos || !absl::EndsWith(line, ")")) return std::nullopt;
  StateTensor t{std::string(line.substr(0, open)), 1, KindOf(line.substr(0, open))};
  const absl::string_view dims = line.substr(open + 2, line.size() - open - 3);
  for (const absl::string_view d : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    size_t n = 0;
    if (!absl::SimpleAtoi(d, &n)) return std::nullopt;
    t.size *= n;
  }
  return t;
}

// Why `v` cannot be a value of a tensor of `kind`, or nullptr when it can.
const char* Violation(StateKind kind, float v, double bound) {
  switch (kind) {
    case StateKind::kMean:
      if (!std::isfinite(v) || std::fabs(v) > bound) return "a mean is finite and within";
      return nullptr;
    case StateKind::kVariance:
      if (!std::isfinite(v) || v < 0 || v > bound) return "a variance is finite, at least 0 and within";
      return nullptr;
    case StateKind::kCounter:
      return std::isfinite(v) && v >= 0 ? nullptr : "a counter is finite and at least 0";
    case StateKind::kValue:
      break;
  }
  return std::isfinite(v) ? nullptr : "a buffer's values are finite";
}

}  // namespace

StateLayout::StateLayout(std::vector<StateTensor> tensors, double bound)
    : tensors_(std::move(tensors)), bound_(bound) {}

StateLayout StateLayout::ForModel(const ModelSpec& spec, double bound,
                                  const std::vector<std::string>& manifest) {
  std::vector<StateTensor> tensors;
  if (spec.type == ModelType::kProgram) {
    for (const std::string& line : manifest) {
      if (std::optional<StateTensor> t = BufferOf(line)) tensors.push_back(*std::move(t));
    }
  } else {
    for (const ParamTensor& t : Model::Layout(spec)) {
      if (t.state) tensors.push_back({t.shape.name, t.shape.size(), KindOf(t.shape.name)});
    }
  }
  return StateLayout(std::move(tensors), bound);
}

absl::Status StateLayout::Check(size_t first, absl::Span<const float> values) const {
  size_t begin = 0;  // of the tensor at `t`
  size_t t = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t at = first + i;
    while (t < tensors_.size() && at >= begin + tensors_[t].size) begin += tensors_[t++].size;
    const StateTensor* tensor = t < tensors_.size() ? &tensors_[t] : nullptr;
    const char* why = Violation(tensor != nullptr ? tensor->kind : StateKind::kValue, values[i],
                                bound_);
    if (why == nullptr) continue;
    const std::string where =
        tensor != nullptr ? absl::StrCat("'", tensor->name, "' holds ", values[i],
                                         " at its element ", at - begin)
                          : absl::StrCat("holds ", values[i], " at its value ", at);
    const bool bounded = tensor != nullptr && (tensor->kind == StateKind::kMean ||
                                               tensor->kind == StateKind::kVariance);
    return absl::InvalidArgumentError(absl::StrCat(
        "model state ", where, ": ", why,
        bounded ? absl::StrFormat(" %g (model.state_bound)", bound_) : ""));
  }
  return absl::OkStatus();
}

}  // namespace monsoon
