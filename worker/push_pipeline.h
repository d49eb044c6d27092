// The gradient pushes of Downpour, sync and SSP workers: the pipeline owns the gradient being
// summed (and, with overlap, the one being sent and the weights its reply brings back), and
// sends on a thread of its own when the push overlaps the next steps (transport.overlap).
#ifndef MONSOON_WORKER_PUSH_PIPELINE_H_
#define MONSOON_WORKER_PUSH_PIPELINE_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/compression.h"
#include "core/finite.h"
#include "core/metrics/trace.h"
#include "worker/background_call.h"
#include "worker/ps_client.h"

namespace monsoon {

// Weights for a later fetch step: pulled, or brought back by a push (PushPullAll).
struct FetchedWeights {
  std::vector<float> params;
  ChunkVersions versions;  // each chunk's version as fetched
  PullResult pull;
  bool ready = false;  // brought by a push and not used yet
};

// Not thread-safe: the training loop's thread calls it; only the push itself runs on the
// pipeline's thread. The destructor waits for a push in flight. Without overlap it holds one
// model-sized buffer (the accumulator, pushed in place, with replies written straight into
// the loop's FetchedWeights); with overlap three (and the gradient in flight and the weights
// arriving have their own).
class PushPipeline {
 public:
  // `client` is borrowed; `topk` (nullable) sparsifies each push (transport.compression topk).
  PushPipeline(PsClient* client, size_t num_params, bool overlap,
               std::unique_ptr<TopKSparsifier> topk);
  ~PushPipeline();
  PushPipeline(const PushPipeline&) = delete;
  PushPipeline& operator=(const PushPipeline&) = delete;

  // Where the loop sums the gradients since the last push (num_params floats).
  absl::Span<float> accumulator() { return absl::MakeSpan(accumulated_); }
  // What the pass that last wrote the accumulator found: the index of its first NaN or
  // infinity (its size when none). Without it, Start scans the accumulator itself.
  void Written(size_t first_non_finite) { written_first_non_finite_ = first_non_finite; }
  bool in_flight() const { return call_.in_flight(); }
  // Every buffer of the pipeline's that a gradient or the weights a reply brings pass through
  // (for TrainableModel::PinHostMemory): fixed for the pipeline's life.
  std::vector<absl::Span<float>> HostBuffers();

  // Starts pushing the accumulator, computed on chunk versions `base` and numbered by `origin`.
  // With `bring_into` (borrowed until Wait returns; its params sized num_params) the reply
  // brings the servers' weights back (Downpour) and Wait puts them there. Without overlap the
  // push has completed on return. An accumulator with a NaN or an infinity is not sent: Wait
  // returns CheckFinite's refusal. The accumulator's contents are undefined afterwards.
  // REQUIRES: !in_flight().
  void Start(const ChunkVersions& base, const PushOrigin& origin,
             FetchedWeights* bring_into /* nullable */, TraceWriter* trace /* nullable */);
  // Waits for the push started last; the weights it brought, if any, are in its bring_into
  // (ready = true). REQUIRES: in_flight().
  absl::StatusOr<PushSummary> Wait();

 private:
  // Pushes `gradient`; with `into`, its reply's weights go there.
  absl::StatusOr<PushSummary> Send(FiniteGradient gradient, const ChunkVersions& base,
                                   const PushOrigin& origin, FetchedWeights* into,
                                   TraceWriter* trace);
  // The accumulator, vouched for by Written or scanned now (after sparsifying).
  absl::StatusOr<FiniteGradient> CheckedAccumulator();

  PsClient* const client_;  // borrowed
  const std::unique_ptr<TopKSparsifier> topk_;
  const bool overlap_;
  std::vector<float> accumulated_;
  std::optional<size_t> written_first_non_finite_;  // Written's, since the last Start
  std::vector<float> sending_;            // with overlap: the push in flight reads it
  FetchedWeights incoming_;               // with overlap: the push in flight writes it
  FetchedWeights* bring_into_ = nullptr;  // Start's
  BackgroundCall call_;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_PUSH_PIPELINE_H_
