// What a server's checkpoint holds, field by field, written once for both directions: the
// header naming the server and job layout, each worker's incarnation, then per chunk its id,
// version, values, optimizer state, ledger and synchronous round. VisitChunk lists a chunk's
// fields for an archive that saves them or loads them (core/run/checkpoint_file.h is the file).
#ifndef MONSOON_SERVER_SERVER_CHECKPOINT_H_
#define MONSOON_SERVER_SERVER_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/run/checkpoint_file.h"
#include "core/sharding_plan.h"
#include "core/status_macros.h"
#include "server/chunk_ledger.h"
#include "server/sync_round.h"

namespace monsoon {

// Identifies what a checkpoint belongs to; a server refuses any other.
struct CheckpointHeader {
  uint64_t run_id;  // RUN_DIR/run_id: no other run's checkpoint is taken
  int64_t server_index;
  uint64_t plan_fingerprint;
  int64_t algorithm;
  int64_t workers;
  int64_t chunks;
};

// One chunk's checkpointed fields, borrowed from wherever they live.
struct ChunkRecord {
  int64_t id = -1;
  uint64_t* version;
  std::vector<float>* values;
  std::vector<float>* optimizer_state;
  ChunkLedger* ledger;
  SyncRound* round;
};

// Writes fields to a checkpoint. Never fails itself (the writer keeps its first error).
class SaveArchive {
 public:
  explicit SaveArchive(CheckpointWriter* out) : out_(out) {}
  template <typename T>
  absl::Status Pod(T* value) {
    out_->Pod(*value);
    return absl::OkStatus();
  }
  template <typename T>
  absl::Status Vector(std::vector<T>* values, size_t /*expected*/) {
    out_->Vector(*values);
    return absl::OkStatus();
  }
  absl::Status Flags(std::vector<bool>* flags, size_t expected);
  absl::Status Int(int* value);

 private:
  CheckpointWriter* const out_;  // borrowed
};

// Reads fields back; DataLoss when a vector is not of the expected size (kAnySize: any).
class LoadArchive {
 public:
  static constexpr size_t kAnySize = static_cast<size_t>(-1);
  explicit LoadArchive(CheckpointReader* in) : in_(in) {}
  template <typename T>
  absl::Status Pod(T* value) {
    return in_->Pod(value);
  }
  template <typename T>
  absl::Status Vector(std::vector<T>* values, size_t expected) {
    return expected == kAnySize ? in_->Vector(values) : in_->Vector(expected, values);
  }
  absl::Status Flags(std::vector<bool>* flags, size_t expected);
  absl::Status Int(int* value);

 private:
  CheckpointReader* const in_;  // borrowed
};

// The sizes loading expects of a chunk's vectors (LoadArchive::kAnySize: any).
struct ChunkSizes {
  size_t values, workers, optimizer_state, round_sum, round_from;
};

// A chunk's fields in file order.
template <class Archive>
absl::Status VisitChunk(Archive& a, ChunkRecord& r, const ChunkSizes& sizes) {
  MONSOON_RETURN_IF_ERROR(a.Pod(&r.id));
  MONSOON_RETURN_IF_ERROR(a.Pod(r.version));
  MONSOON_RETURN_IF_ERROR(a.Vector(r.values, sizes.values));
  MONSOON_RETURN_IF_ERROR(a.Vector(r.optimizer_state, sizes.optimizer_state));
  ChunkLedger& l = *r.ledger;
  MONSOON_RETURN_IF_ERROR(a.Vector(&l.clock, sizes.workers));
  MONSOON_RETURN_IF_ERROR(a.Vector(&l.position, sizes.workers));
  MONSOON_RETURN_IF_ERROR(a.Vector(&l.applied, sizes.workers));
  MONSOON_RETURN_IF_ERROR(a.Vector(&l.sequence_sum, sizes.workers));
  MONSOON_RETURN_IF_ERROR(a.Vector(&l.duplicates, sizes.workers));
  SyncRound& round = *r.round;
  MONSOON_RETURN_IF_ERROR(a.Vector(&round.sum, sizes.round_sum));
  MONSOON_RETURN_IF_ERROR(a.Pod(&round.weight));
  MONSOON_RETURN_IF_ERROR(a.Pod(&round.epoch));
  MONSOON_RETURN_IF_ERROR(a.Int(&round.fresh));
  return a.Flags(&round.from, sizes.round_from);
}

// The header's mismatch with `expected`, naming the checkpoint: FailedPrecondition, else OK.
absl::Status CheckHeader(const CheckpointHeader& found, const CheckpointHeader& expected,
                         const std::string& path);

// The weights of server `expected.server_index`'s checkpoint `in` into `weights` (the whole
// flat vector, plan.num_params() floats), without building a server. Returns the smallest
// chunk version.
absl::StatusOr<uint64_t> ReadCheckpointWeights(CheckpointReader* in,
                                               const CheckpointHeader& expected,
                                               const ShardingPlan& plan, absl::Span<float> weights);

}  // namespace monsoon

#endif  // MONSOON_SERVER_SERVER_CHECKPOINT_H_
