#include "core/sharding_plan.h"

#include <algorithm>

#include "absl/status/status.h"

namespace monsoon {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  // FNV-1a over the 8 bytes of v.
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

absl::StatusOr<ShardingPlan> ShardingPlan::Create(size_t num_params, int num_servers,
                                                  size_t max_chunk_floats, size_t num_state) {
  if (num_params == 0) return absl::InvalidArgumentError("model has no parameters");
  if (num_state >= num_params) {
    return absl::InvalidArgumentError("model has no trained parameters, only state");
  }
  if (num_servers <= 0) return absl::InvalidArgumentError("need at least one server");
  if (max_chunk_floats == 0) return absl::InvalidArgumentError("chunk size must be positive");
  ShardingPlan plan;
  plan.num_params_ = num_params;
  plan.num_state_ = num_state;
  plan.num_servers_ = num_servers;
  uint64_t h = 14695981039346656037ULL;
  plan.Cut(0, num_params - num_state, static_cast<size_t>(num_servers), max_chunk_floats, &h);
  plan.Cut(num_params - num_state, num_params, 1, max_chunk_floats, &h);
  plan.fingerprint_ = Mix(Mix(h, num_params), static_cast<uint64_t>(num_servers));
  if (num_state > 0) plan.fingerprint_ = Mix(plan.fingerprint_, num_state);
  return plan;
}

void ShardingPlan::Cut(size_t begin, size_t end, size_t min_chunks, size_t max_chunk_floats,
                       uint64_t* h) {
  const size_t floats = end - begin;
  if (floats == 0) return;
  size_t count = (floats + max_chunk_floats - 1) / max_chunk_floats;
  count = std::min(std::max(count, min_chunks), floats);
  const size_t base = floats / count;
  const size_t extra = floats % count;  // the first `extra` chunks get one more float
  chunks_.reserve(chunks_.size() + count);
  size_t offset = begin;
  for (size_t i = 0; i < count; ++i) {
    Chunk c;
    c.id = static_cast<int>(chunks_.size());
    c.offset = offset;
    c.size = base + (i < extra ? 1 : 0);
    c.server = c.id % num_servers_;
    c.state = begin > 0;
    offset += c.size;
    *h = Mix(Mix(*h, c.offset), c.size);
    chunks_.push_back(c);
  }
}

std::vector<Chunk> ShardingPlan::ChunksOf(int server) const {
  std::vector<Chunk> out;
  for (const Chunk& c : chunks_) {
    if (c.server == server) out.push_back(c);
  }
  return out;
}

size_t ShardingPlan::FloatsOf(int server) const {
  size_t n = 0;
  for (const Chunk& c : chunks_) {
    if (c.server == server) n += c.size;
  }
  return n;
}

size_t ShardingPlan::max_chunk_size() const {
  size_t m = 0;
  for (const Chunk& c : chunks_) m = std::max(m, c.size);
  return m;
}

}  // namespace monsoon
