#include "worker/push_pipeline.h"

#include <utility>

namespace monsoon {

PushPipeline::PushPipeline(PsClient* client, size_t num_params, bool overlap,
                           std::unique_ptr<TopKSparsifier> topk)
    : client_(client),
      topk_(std::move(topk)),
      overlap_(overlap),
      accumulated_(num_params),
      sending_(overlap ? num_params : 0),
      call_(overlap) {
  incoming_.params.resize(overlap ? num_params : 0);
}

PushPipeline::~PushPipeline() {
  if (call_.in_flight()) call_.Wait().IgnoreError();  // it borrows the buffers below
}

std::vector<absl::Span<float>> PushPipeline::HostBuffers() {
  std::vector<absl::Span<float>> buffers = {absl::MakeSpan(accumulated_)};
  if (overlap_) {
    buffers.push_back(absl::MakeSpan(sending_));
    buffers.push_back(absl::MakeSpan(incoming_.params));
  }
  return buffers;
}

absl::StatusOr<PushSummary> PushPipeline::Send(FiniteGradient gradient, const ChunkVersions& base,
                                               const PushOrigin& origin, FetchedWeights* into,
                                               TraceWriter* trace) {
  if (into == nullptr) {
    TraceScope span(trace, kTraceOverlapped, "push");
    return client_->PushAll(gradient, base, origin);
  }
  TraceScope span(trace, kTraceOverlapped, "push+pull");
  PullAfterPush after{absl::MakeSpan(into->params), &into->versions, {}};
  absl::StatusOr<PushSummary> summary = client_->PushPullAll(gradient, base, origin, &after);
  into->pull = after.result;
  return summary;
}

absl::StatusOr<FiniteGradient> PushPipeline::CheckedAccumulator() {
  std::optional<size_t> written = std::exchange(written_first_non_finite_, std::nullopt);
  if (topk_ != nullptr) {
    topk_->Sparsify(absl::MakeSpan(accumulated_));
    written.reset();  // the residual added in may overflow
  }
  if (!written.has_value()) return FiniteGradient::Check(accumulated_);
  return FiniteGradient::Written(accumulated_, *written);
}

void PushPipeline::Start(const ChunkVersions& base, const PushOrigin& origin,
                         FetchedWeights* bring_into, TraceWriter* trace) {
  bring_into_ = bring_into;
  absl::StatusOr<FiniteGradient> gradient = CheckedAccumulator();
  if (!gradient.ok()) {
    call_.Start([refused = gradient.status()]() -> absl::StatusOr<PushSummary> { return refused; });
    return;
  }
  if (!overlap_) {
    call_.Start([this, gradient = *gradient, base, origin, bring_into, trace] {
      return Send(gradient, base, origin, bring_into, trace);
    });
    return;
  }
  std::swap(accumulated_, sending_);  // the gradient's values move with the vector
  FetchedWeights* incoming = nullptr;
  if (bring_into != nullptr) incoming = &incoming_;
  call_.Start([this, gradient = *gradient, base, origin, incoming, trace] {
    return Send(gradient, base, origin, incoming, trace);
  });
}

absl::StatusOr<PushSummary> PushPipeline::Wait() {
  absl::StatusOr<PushSummary> summary = call_.Wait();
  FetchedWeights* into = std::exchange(bring_into_, nullptr);
  if (!summary.ok() || into == nullptr) return summary;
  if (overlap_) {
    std::swap(into->params, incoming_.params);
    std::swap(into->versions, incoming_.versions);
    into->pull = incoming_.pull;
  }
  into->ready = true;
  return summary;
}

}  // namespace monsoon
