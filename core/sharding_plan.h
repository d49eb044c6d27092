// The sharding plan: the model's flat vector cut into contiguous chunks, spread over S servers
// so that each holds about the same number of bytes. The model's state (the vector's last
// values; TrainableModel::num_state) gets chunks of its own, which the servers update by the
// state rule rather than the optimizer. Every role computes the same plan from (floats, state
// floats, S, chunk size); the fingerprint detects a mismatch.
#ifndef MONSOON_CORE_SHARDING_PLAN_H_
#define MONSOON_CORE_SHARDING_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace monsoon {

struct Chunk {
  int id = 0;
  size_t offset = 0;  // first parameter, in floats
  size_t size = 0;    // in floats
  int server = 0;
  bool state = false;  // holds model state, not trained weights
};

class ShardingPlan {
 public:
  // Cuts the trained num_params - num_state floats into max(ceil(trained / max_chunk_floats),
  // num_servers) chunks of near-equal size (never more chunks than floats), then the last
  // num_state floats into ceil(num_state / max_chunk_floats) state chunks the same way, and
  // deals them all round-robin, so that servers differ by at most one chunk. InvalidArgument
  // on non-positive inputs or when nothing is trained.
  static absl::StatusOr<ShardingPlan> Create(size_t num_params, int num_servers,
                                             size_t max_chunk_floats, size_t num_state = 0);

  size_t num_params() const { return num_params_; }
  size_t num_state() const { return num_state_; }
  int num_servers() const { return num_servers_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  int num_chunks() const { return static_cast<int>(chunks_.size()); }
  const Chunk& chunk(int id) const { return chunks_[id]; }
  // Chunks held by one server, in id order.
  std::vector<Chunk> ChunksOf(int server) const;
  size_t FloatsOf(int server) const;
  size_t max_chunk_size() const;
  // Identifies (num_params, servers, chunk boundaries).
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  // Cuts [begin, end) into at least min_chunks chunks (state ones where begin > 0), hashing
  // their bounds into *h.
  void Cut(size_t begin, size_t end, size_t min_chunks, size_t max_chunk_floats, uint64_t* h);

  size_t num_params_ = 0;
  size_t num_state_ = 0;
  int num_servers_ = 0;
  std::vector<Chunk> chunks_;
  uint64_t fingerprint_ = 0;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_SHARDING_PLAN_H_
