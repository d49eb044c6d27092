// The elastic exchange of EASGD/EAMSGD workers: sends the worker's weights x, receives the
// elastic force d = alpha (x - centre) per chunk. The exchanger owns both buffers and the
// chunk versions, and exchanges on a thread of its own when the exchange overlaps the next
// steps (transport.overlap).
#ifndef MONSOON_WORKER_ELASTIC_EXCHANGER_H_
#define MONSOON_WORKER_ELASTIC_EXCHANGER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/metrics/trace.h"
#include "worker/background_call.h"
#include "worker/ps_client.h"

namespace monsoon {

// Not thread-safe: the training loop's thread calls it; only the exchange itself runs on the
// exchanger's thread. The destructor waits for an exchange in flight.
class ElasticExchanger {
 public:
  // `client` is borrowed.
  ElasticExchanger(PsClient* client, size_t num_params, bool overlap);
  ~ElasticExchanger();
  ElasticExchanger(const ElasticExchanger&) = delete;
  ElasticExchanger& operator=(const ElasticExchanger&) = delete;

  // Pulls the centre into weights() (the worker's starting point) and its versions.
  absl::StatusOr<PullResult> PullCentre();
  // The weights x the next exchange sends: the loop fills them before Start.
  absl::Span<float> weights() { return absl::MakeSpan(weights_); }
  // Starts the exchange numbered by `origin`. Without overlap it has completed on return.
  // REQUIRES: !in_flight().
  void Start(const PushOrigin& origin, TraceWriter* trace /* nullable */);
  bool in_flight() const { return call_.in_flight(); }
  // True when the exchange in flight has finished (Wait will not block).
  bool Arrived() const { return call_.Arrived(); }
  // Waits for the exchange; on success difference() holds its d. REQUIRES: in_flight().
  absl::StatusOr<PushSummary> Wait();
  absl::Span<const float> difference() const { return difference_; }
  // The smallest chunk version after the last exchange (or the first pull).
  uint64_t min_version() const;

 private:
  PsClient* const client_;         // borrowed
  std::vector<float> weights_;     // the exchange in flight reads it
  std::vector<float> difference_;  // ... and writes these two
  ChunkVersions versions_;
  BackgroundCall call_;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_ELASTIC_EXCHANGER_H_
