#include "server/server_checkpoint.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/config/job_config.h"

namespace monsoon {

absl::Status SaveArchive::Flags(std::vector<bool>* flags, size_t) {
  out_->Vector(std::vector<uint8_t>(flags->begin(), flags->end()));
  return absl::OkStatus();
}

absl::Status SaveArchive::Int(int* value) {
  out_->Pod<int64_t>(*value);
  return absl::OkStatus();
}

absl::Status LoadArchive::Flags(std::vector<bool>* flags, size_t expected) {
  std::vector<uint8_t> bytes;
  MONSOON_RETURN_IF_ERROR(Vector(&bytes, expected));
  flags->assign(bytes.begin(), bytes.end());
  return absl::OkStatus();
}

absl::Status LoadArchive::Int(int* value) {
  int64_t stored = 0;
  MONSOON_RETURN_IF_ERROR(in_->Pod(&stored));
  *value = static_cast<int>(stored);
  return absl::OkStatus();
}

absl::Status CheckHeader(const CheckpointHeader& h, const CheckpointHeader& e,
                         const std::string& path) {
  if (h.run_id != e.run_id) {
    return absl::FailedPreconditionError(
        absl::StrFormat("checkpoint %s belongs to another run (run id %016x; this run is %016x)",
                        path, h.run_id, e.run_id));
  }
  if (h.server_index == e.server_index && h.plan_fingerprint == e.plan_fingerprint &&
      h.algorithm == e.algorithm && h.workers == e.workers && h.chunks == e.chunks) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint ", path, " belongs to another job layout (server ", h.server_index,
                   ", ", kAlgorithmNames.Name(static_cast<Algorithm>(h.algorithm)), ", ", h.workers,
                   " workers, plan ", h.plan_fingerprint, "); this is server ", e.server_index,
                   ", ", kAlgorithmNames.Name(static_cast<Algorithm>(e.algorithm)), ", ", e.workers,
                   " workers, plan ", e.plan_fingerprint));
}

absl::StatusOr<uint64_t> ReadCheckpointWeights(CheckpointReader* in,
                                               const CheckpointHeader& expected,
                                               const ShardingPlan& plan,
                                               absl::Span<float> weights) {
  CheckpointHeader header;
  MONSOON_RETURN_IF_ERROR(in->Pod(&header));
  MONSOON_RETURN_IF_ERROR(CheckHeader(header, expected, in->path()));
  std::vector<uint64_t> incarnations;
  MONSOON_RETURN_IF_ERROR(in->Vector(expected.workers, &incarnations));
  LoadArchive archive(in);
  uint64_t min_version = std::numeric_limits<uint64_t>::max();
  for (const Chunk& c : plan.ChunksOf(static_cast<int>(expected.server_index))) {
    uint64_t version = 0;
    std::vector<float> values, optimizer_state;
    ChunkLedger ledger;
    SyncRound round;
    ChunkRecord record{-1, &version, &values, &optimizer_state, &ledger, &round};
    const size_t any = LoadArchive::kAnySize;
    MONSOON_RETURN_IF_ERROR(VisitChunk(
        archive, record, {c.size, static_cast<size_t>(expected.workers), any, any, any}));
    if (record.id != c.id) {
      return absl::DataLossError(absl::StrCat("checkpoint ", in->path(), " has chunk ", record.id,
                                              " where chunk ", c.id, " was expected"));
    }
    std::copy(values.begin(), values.end(), weights.begin() + c.offset);
    min_version = std::min(min_version, version);
  }
  MONSOON_RETURN_IF_ERROR(in->Finish());
  return min_version;
}

}  // namespace monsoon
