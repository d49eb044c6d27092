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
                                                  size_t max_chunk_floats) {
  if (num_params == 0) return absl::InvalidArgumentError("model has no parameters");
  if (num_servers <= 0) return absl::InvalidArgumentError("need at least one server");
  if (max_chunk_floats == 0) return absl::InvalidArgumentError("chunk size must be positive");
  ShardingPlan plan;
  plan.num_params_ = num_params;
  plan.num_servers_ = num_servers;
  size_t count = (num_params + max_chunk_floats - 1) / max_chunk_floats;
  count = std::min(std::max(count, static_cast<size_t>(num_servers)), num_params);
  const size_t base = num_params / count;
  const size_t extra = num_params % count;  // the first `extra` chunks get one more float
  size_t offset = 0;
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < count; ++i) {
    Chunk c;
    c.id = static_cast<int>(i);
    c.offset = offset;
    c.size = base + (i < extra ? 1 : 0);
    c.server = static_cast<int>(i % num_servers);
    offset += c.size;
    h = Mix(Mix(h, c.offset), c.size);
    plan.chunks_.push_back(c);
  }
  plan.fingerprint_ = Mix(Mix(h, num_params), static_cast<uint64_t>(num_servers));
  return plan;
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
