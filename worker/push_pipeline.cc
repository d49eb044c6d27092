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
      call_(overlap) {}

PushPipeline::~PushPipeline() {
  if (call_.in_flight()) call_.Wait().IgnoreError();  // it borrows the buffers below
}

absl::StatusOr<PushSummary> PushPipeline::Send(absl::Span<const float> gradient,
                                               const ChunkVersions& base, const PushOrigin& origin,
                                               FetchedWeights* into, TraceWriter* trace) {
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

void PushPipeline::Start(const ChunkVersions& base, const PushOrigin& origin,
                         FetchedWeights* bring_into, TraceWriter* trace) {
  bring_into_ = bring_into;
  if (topk_ != nullptr) topk_->Sparsify(absl::MakeSpan(accumulated_));
  if (!overlap_) {
    call_.Start([this, base, origin, bring_into, trace] {
      return Send(accumulated_, base, origin, bring_into, trace);
    });
    return;
  }
  std::swap(accumulated_, sending_);
  FetchedWeights* incoming = nullptr;
  if (bring_into != nullptr) {
    incoming_.params.resize(bring_into->params.size());
    incoming = &incoming_;
  }
  call_.Start([this, base, origin, incoming, trace] {
    return Send(sending_, base, origin, incoming, trace);
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
