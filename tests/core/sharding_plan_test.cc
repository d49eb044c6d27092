#include "core/sharding_plan.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

namespace monsoon {
namespace {

TEST_CASE("ShardingPlan: every parameter is in exactly one chunk and servers are balanced",
          "[core][sharding]") {
  for (size_t n : {1ul, 7ul, 1000ul, 235146ul, 10000019ul}) {
    for (int servers : {1, 2, 3, 4, 7}) {
      for (size_t chunk : {1ul, 1000ul, 262144ul}) {
        auto plan = ShardingPlan::Create(n, servers, chunk);
        REQUIRE(plan.ok());
        INFO("n=" << n << " servers=" << servers << " chunk=" << chunk);
        // Counted, then checked once: one assertion per element would be 10^8 of them.
        std::vector<int> covered(n, 0);
        size_t misfits = 0;
        for (const Chunk& c : plan->chunks()) {
          misfits += c.size == 0 || c.size > chunk;
          for (size_t i = c.offset; i < c.offset + c.size && i < n; ++i) ++covered[i];
        }
        CHECK(misfits == 0);
        CHECK(std::count(covered.begin(), covered.end(), 1) == static_cast<long>(n));
        size_t lo = n, hi = 0;
        for (int s = 0; s < servers; ++s) {
          lo = std::min(lo, plan->FloatsOf(s));
          hi = std::max(hi, plan->FloatsOf(s));
        }
        CHECK(hi - lo <= plan->max_chunk_size());
        if (n >= static_cast<size_t>(servers)) CHECK(lo > 0);
      }
    }
  }
}

TEST_CASE("ShardingPlan: same inputs give the same fingerprint, different ones differ",
          "[core][sharding]") {
  auto a = ShardingPlan::Create(1000, 2, 100);
  auto b = ShardingPlan::Create(1000, 2, 100);
  auto c = ShardingPlan::Create(1000, 3, 100);
  auto d = ShardingPlan::Create(1001, 2, 100);
  CHECK(a->fingerprint() == b->fingerprint());
  CHECK(a->fingerprint() != c->fingerprint());
  CHECK(a->fingerprint() != d->fingerprint());
}

TEST_CASE("ShardingPlan: model state gets chunks of its own, dealt on round-robin",
          "[core][sharding]") {
  auto plan = ShardingPlan::Create(1000, 2, 300, 350);  // 650 trained, 350 state
  REQUIRE(plan.ok());
  size_t state = 0, next = 0;
  for (const Chunk& c : plan->chunks()) {
    CHECK(c.offset == next);
    next += c.size;
    CHECK(c.state == (c.offset >= 650));
    CHECK(c.server == c.id % 2);
    if (c.state) state += c.size;
  }
  CHECK(state == 350);
  CHECK(plan->num_chunks() == 3 + 2);
  CHECK(plan->num_state() == 350);
  CHECK(plan->fingerprint() != ShardingPlan::Create(1000, 2, 300)->fingerprint());
  CHECK(absl::IsInvalidArgument(ShardingPlan::Create(10, 1, 10, 10).status()));
}

TEST_CASE("ShardingPlan: rejects empty models and zero servers", "[core][sharding]") {
  CHECK(absl::IsInvalidArgument(ShardingPlan::Create(0, 1, 10).status()));
  CHECK(absl::IsInvalidArgument(ShardingPlan::Create(10, 0, 10).status()));
  CHECK(absl::IsInvalidArgument(ShardingPlan::Create(10, 1, 0).status()));
}

}  // namespace
}  // namespace monsoon
