// The worker's view of the parameter servers: pull the whole flat parameter vector, push a
// whole flat gradient, or exchange whole weights (EASGD); the client cuts each into the
// sharding plan's chunks. Implementations: GrpcPsClient (real RPCs) and InProcessPsClient
// (direct calls, for tests).
#ifndef MONSOON_WORKER_PS_CLIENT_H_
#define MONSOON_WORKER_PS_CLIENT_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/finite.h"
#include "core/sharding_plan.h"
#include "server/ps_types.h"

namespace monsoon {

// Who a client speaks for (sent with Hello, pushes and Finish).
struct ClientIdentity {
  RoleKind role = RoleKind::kWorker;
  int index = 0;
  // This process of the worker: larger for every restart (servers refuse older ones).
  uint64_t incarnation = 0;
};

// A fresh incarnation number for this process: the wall clock in nanoseconds.
uint64_t NewIncarnation();

struct TransferCounters {
  uint64_t bytes_sent = 0;      // payload bytes pushed or exchanged
  uint64_t bytes_received = 0;  // payload bytes pulled or exchanged
};

// Per-chunk versions, indexed by chunk id: what a pull saw, what a push was computed on.
using ChunkVersions = std::vector<uint64_t>;

// What a whole pull waits for: chunk c until its version reaches min_versions[c] (no version
// wait when min_versions is empty), and every chunk until each live worker has pushed it at
// least min_clock times.
struct PullWait {
  ChunkVersions min_versions;
  uint64_t min_clock = 0;

  // The server-side condition for chunk `id`.
  PullCondition ForChunk(int id) const {
    return {min_versions.empty() ? 0 : min_versions[id], min_clock};
  }
};

// A whole pull: the smallest version and slowest worker clock over all chunks.
struct PullResult {
  uint64_t min_version = 0;
  uint64_t slowest_clock = 0;

  // The result of a pull before its first chunk: each chunk taken lowers it to its own.
  static PullResult BeforeChunks() {
    return {std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max()};
  }
  void TakeChunk(uint64_t version, uint64_t chunk_slowest_clock) {
    min_version = std::min(min_version, version);
    slowest_clock = std::min(slowest_clock, chunk_slowest_clock);
  }
};

// Where PushPullAll puts the weights its replies bring back.
struct PullAfterPush {
  absl::Span<float> params;           // plan.num_params() floats, overwritten
  ChunkVersions* versions = nullptr;  // each chunk's version as pulled (required)
  PullResult result;                  // set by PushPullAll
};

// A whole push or exchange: staleness averaged over its chunks, and chunks dropped.
struct PushSummary {
  double mean_staleness = 0;
  int chunks_dropped = 0;
  int chunks_duplicate = 0;

  // Adds one chunk's reply, of the `chunks` of the whole push or exchange (an exchange is
  // always applied).
  void AddChunk(uint64_t staleness, bool applied, bool duplicate, int chunks) {
    mean_staleness += static_cast<double>(staleness) / chunks;
    chunks_dropped += applied || duplicate ? 0 : 1;
    chunks_duplicate += duplicate ? 1 : 0;
  }
};

// A client serves one worker: one push (PushAll) may run in another thread while the worker
// pulls (PullAll); otherwise one call at a time.
class PsClient {
 public:
  virtual ~PsClient() = default;
  // Overwrites `params` (plan.num_params() floats) with the servers' values, each chunk once
  // it satisfies `wait`; stores each chunk's version in *versions (when not null).
  virtual absl::StatusOr<PullResult> PullAll(absl::Span<float> params, const PullWait& wait,
                                             ChunkVersions* versions) = 0;
  // Sends `gradient` (plan.num_params() floats), each chunk computed from weights of
  // base_versions[chunk id]. `origin` numbers the push (its incarnation is the client's).
  // A chunk the server already had counts in PushSummary::chunks_duplicate. The gradient's
  // type says it has no NaN or infinity: a gradient with one is refused whole before any
  // chunk is sent, by whoever made it (FiniteGradient).
  virtual absl::StatusOr<PushSummary> PushAll(FiniteGradient gradient,
                                              const ChunkVersions& base_versions,
                                              const PushOrigin& origin) = 0;
  // PushAll, then PullAll(pull->params, {}, pull->versions) in the same round trips: each
  // chunk's reply carries its weights right after the push. Downpour only (its pulls never
  // wait); servers of other algorithms refuse it with FailedPrecondition.
  virtual absl::StatusOr<PushSummary> PushPullAll(FiniteGradient gradient,
                                                  const ChunkVersions& base_versions,
                                                  const PushOrigin& origin,
                                                  PullAfterPush* pull) = 0;
  // The elastic exchange of every chunk: sends `weights`, receives the differences into
  // `difference` (same size; zero for a duplicate chunk). *versions holds each chunk's version
  // from the previous exchange on entry and this exchange's on return. Weights with a NaN or an
  // infinity are refused whole before any chunk is sent.
  virtual absl::StatusOr<PushSummary> ExchangeAll(absl::Span<const float> weights,
                                                  absl::Span<float> difference,
                                                  ChunkVersions* versions,
                                                  const PushOrigin& origin) = 0;
  // Where this worker continues: the smallest resume point over the servers (asked when the
  // client connected).
  virtual absl::StatusOr<ResumePoint> Resume() = 0;
  // Tells every server this client is done.
  virtual absl::Status Finish() = 0;
  virtual absl::StatusOr<std::vector<ServerStats>> AllStats() = 0;
  virtual TransferCounters counters() const = 0;
  // The chunks this client cuts vectors into.
  virtual const ShardingPlan& plan() const = 0;
};

}  // namespace monsoon

#endif  // MONSOON_WORKER_PS_CLIENT_H_
