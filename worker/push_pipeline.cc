#include "worker/push_pipeline.h"

#include <utility>

namespace monsoon {

PushPipeline::PushPipeline(PsClient* client, size_t num_params, bool overlap,
                           std::unique_ptr<TopKSparsifier> topk)
    : client_(client),
      topk_(std::move(topk)),
      accumulated_(num_params),
      sending_(num_params),
      call_(overlap) {}

PushPipeline::~PushPipeline() {
  if (call_.in_flight()) call_.Wait().IgnoreError();  // it borrows the buffers below
}

void PushPipeline::Start(const ChunkVersions& base, const PushOrigin& origin, bool bring_weights,
                         TraceWriter* trace) {
  std::swap(accumulated_, sending_);
  if (topk_ != nullptr) topk_->Sparsify(absl::MakeSpan(sending_));
  bringing_weights_ = bring_weights;
  if (bring_weights) incoming_.params.resize(sending_.size());
  call_.Start([this, base, origin, bring_weights, trace]() -> absl::StatusOr<PushSummary> {
    if (!bring_weights) {
      TraceScope span(trace, kTraceOverlapped, "push");
      return client_->PushAll(sending_, base, origin);
    }
    TraceScope span(trace, kTraceOverlapped, "push+pull");
    PullAfterPush after{absl::MakeSpan(incoming_.params), &incoming_.versions, {}};
    absl::StatusOr<PushSummary> summary = client_->PushPullAll(sending_, base, origin, &after);
    incoming_.pull = after.result;
    return summary;
  });
}

absl::StatusOr<PushSummary> PushPipeline::Wait(FetchedWeights* fetched) {
  absl::StatusOr<PushSummary> summary = call_.Wait();
  if (summary.ok() && bringing_weights_) {
    std::swap(fetched->params, incoming_.params);
    std::swap(fetched->versions, incoming_.versions);
    fetched->pull = incoming_.pull;
    fetched->ready = true;
  }
  bringing_weights_ = false;
  return summary;
}

}  // namespace monsoon
