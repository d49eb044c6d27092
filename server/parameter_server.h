// The parameter server's logic without any transport: one server's chunks of the flat
// parameter space, the update rule applied to pushes, version counters, and the bookkeeping
// of which clients have finished. The gRPC adapter (grpc_parameter_server.h) and the
// in-process client (worker/in_process_ps_client.h) both drive this class.
#ifndef MONSOON_SERVER_PARAMETER_SERVER_H_
#define MONSOON_SERVER_PARAMETER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/model.h"
#include "core/sharding_plan.h"
#include "server/update_rule.h"

namespace monsoon {

enum class ClientRole { kWorker, kEvaluator };

struct ServerStats {
  int server_index = 0;
  uint64_t pushes_applied = 0;
  uint64_t pushes_rejected = 0;
  uint64_t pulls_served = 0;
  uint64_t bytes_received = 0;  // gradient payload bytes accepted
  uint64_t bytes_sent = 0;      // weight payload bytes served
  int workers_finished = 0;
  int workers_expected = 0;
  bool evaluator_finished = false;
};

// Thread-safe: pulls and pushes on different chunks run in parallel; each chunk has its own
// lock, held only while its values are read or updated.
class ParameterServer {
 public:
  // Holds plan.ChunksOf(index), initialised to the model's initial values for `seed`.
  ParameterServer(int index, const ShardingPlan& plan, const ModelSpec& spec, uint64_t seed,
                  std::unique_ptr<UpdateRule> rule, int workers_expected, bool evaluator_expected);

  int index() const { return index_; }
  const ShardingPlan& plan() const { return plan_; }

  // FailedPrecondition when the client's plan fingerprint differs from this server's.
  absl::Status Hello(uint64_t plan_fingerprint) const;

  // NotFound when this server does not hold the chunk.
  absl::StatusOr<size_t> ChunkSize(int chunk_id) const;

  // Copies the chunk's current values (a consistent snapshot) into out, which must hold
  // exactly ChunkSize(chunk_id) floats; returns the chunk's version.
  absl::StatusOr<uint64_t> Pull(int chunk_id, absl::Span<float> out);

  // Applies a gradient for one chunk through the update rule and returns the new version.
  // InvalidArgument (and the weights stay unchanged) when the size is wrong or a value is
  // NaN/Inf; NotFound for a chunk this server does not hold.
  absl::StatusOr<uint64_t> Push(int chunk_id, int worker_index, uint64_t base_version,
                                absl::Span<const float> gradient);

  // Records that a client will send nothing more. InvalidArgument for an unknown index.
  absl::Status Finish(ClientRole role, int index);

  // True once every expected worker and evaluator has finished.
  bool AllFinished() const;
  // Blocks until AllFinished() or the timeout; returns AllFinished().
  bool WaitAllFinished(absl::Duration timeout) const;

  ServerStats Stats() const;

 private:
  struct ChunkState {
    Chunk meta;
    absl::Mutex mu;
    std::vector<float> values ABSL_GUARDED_BY(mu);
    std::vector<float> state ABSL_GUARDED_BY(mu);
    uint64_t version ABSL_GUARDED_BY(mu) = 0;
  };
  absl::StatusOr<ChunkState*> Find(int chunk_id) const;
  bool AllFinishedLocked() const ABSL_SHARED_LOCKS_REQUIRED(finish_mu_);

  // Immutable after construction.
  const int index_;
  const ShardingPlan plan_;
  const std::unique_ptr<UpdateRule> rule_;
  const int workers_expected_;
  const bool evaluator_expected_;
  std::map<int, std::unique_ptr<ChunkState>> chunks_;  // the map itself is never modified

  std::atomic<uint64_t> pushes_applied_{0};
  std::atomic<uint64_t> pushes_rejected_{0};
  std::atomic<uint64_t> pulls_served_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> bytes_sent_{0};

  mutable absl::Mutex finish_mu_;
  std::vector<bool> worker_finished_ ABSL_GUARDED_BY(finish_mu_);
  bool evaluator_finished_ ABSL_GUARDED_BY(finish_mu_) = false;
};

}  // namespace monsoon

#endif  // MONSOON_SERVER_PARAMETER_SERVER_H_
