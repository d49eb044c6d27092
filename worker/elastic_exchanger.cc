#include "worker/elastic_exchanger.h"

#include <algorithm>

namespace monsoon {

ElasticExchanger::ElasticExchanger(PsClient* client, size_t num_params, bool overlap)
    : client_(client), weights_(num_params), difference_(num_params), call_(overlap) {}

ElasticExchanger::~ElasticExchanger() {
  if (call_.in_flight()) call_.Wait().IgnoreError();  // it borrows the buffers below
}

absl::StatusOr<PullResult> ElasticExchanger::PullCentre() {
  return client_->PullAll(absl::MakeSpan(weights_), {}, &versions_);
}

void ElasticExchanger::Start(const PushOrigin& origin, TraceWriter* trace) {
  call_.Start([this, origin, trace] {
    TraceScope span(trace, kTraceOverlapped, "exchange");
    return client_->ExchangeAll(weights_, absl::MakeSpan(difference_), &versions_, origin);
  });
}

absl::StatusOr<PushSummary> ElasticExchanger::Wait() { return call_.Wait(); }

uint64_t ElasticExchanger::min_version() const {
  return versions_.empty() ? 0 : *std::min_element(versions_.begin(), versions_.end());
}

}  // namespace monsoon
