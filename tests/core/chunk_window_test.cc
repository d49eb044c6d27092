#include "core/process/chunk_window.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace monsoon {
namespace {

// 4 chunks of 875 floats, dealt round-robin: server 0 holds chunks 0 and 2.
ShardingPlan Plan() { return *ShardingPlan::Create(3500, 2, 1000); }

TEST_CASE("chunk window: a chunk reads once published, at the version asked for", "[shm]") {
  const ShardingPlan plan = Plan();
  auto window = ChunkWindow::Create(plan, 0);
  REQUIRE(window.ok());
  const Chunk chunk = plan.ChunksOf(0)[1];
  std::vector<float> values(chunk.size), out(chunk.size);
  WindowedChunk seen;
  CHECK_FALSE((*window)->Read(chunk.id, 0, absl::MakeSpan(out), &seen));  // never published
  std::iota(values.begin(), values.end(), 1.0f);
  (*window)->Publish(chunk.id, {7, 3}, values);
  REQUIRE((*window)->Read(chunk.id, 7, absl::MakeSpan(out), &seen));
  CHECK(out == values);
  CHECK(seen.version == 7);
  CHECK(seen.slowest_clock == 3);
  CHECK_FALSE((*window)->Read(chunk.id, 8, absl::MakeSpan(out), &seen));  // not there yet
  (*window)->Publish(chunk.id, {7, 4}, {});                               // the clock alone
  REQUIRE((*window)->Read(chunk.id, 0, absl::MakeSpan(out), &seen));
  CHECK(seen.slowest_clock == 4);
  CHECK(out == values);
  std::vector<float> wrong_size(chunk.size + 1);
  CHECK_FALSE((*window)->Read(chunk.id, 0, absl::MakeSpan(wrong_size), &seen));
}

TEST_CASE("chunk window: another process maps it read-only, and cannot map it writable",
          "[shm][security]") {
  const ShardingPlan plan = Plan();
  auto window = ChunkWindow::Create(plan, 0);
  REQUIRE(window.ok());
  CHECK((*window)->bytes() == ChunkWindow::BytesFor(plan, 0));
  CHECK((*window)->bytes() == 2 * (64 + 3520));  // 3500 bytes of values padded to 64
  const Chunk chunk = plan.ChunksOf(0)[0];
  std::vector<float> values(chunk.size, 2.5f), out(chunk.size);
  (*window)->Publish(chunk.id, {1, 0}, values);
  auto client = ChunkWindow::Attach(plan, 0, getpid(), (*window)->fd(), (*window)->bytes());
  REQUIRE(client.ok());
  WindowedChunk seen;
  REQUIRE((*client)->Read(chunk.id, 1, absl::MakeSpan(out), &seen));
  CHECK(out == values);
  CHECK_FALSE(
      ChunkWindow::Attach(plan, 0, getpid(), (*window)->fd(), (*window)->bytes() + 64).ok());
  // The seal refuses a writable mapping even to a descriptor opened for writing.
  const std::string path = absl::StrCat("/proc/self/fd/", (*window)->fd());
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* writable = mmap(nullptr, (*window)->bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(writable == MAP_FAILED);
  if (writable != MAP_FAILED) munmap(writable, (*window)->bytes());
  close(fd);
}

TEST_CASE("chunk window: a read that overlaps a write is never taken", "[shm]") {
  // One chunk of 256 KiB, rewritten without pause: version k holds k everywhere, so a copy
  // that mixes two versions shows.
  const ShardingPlan plan = *ShardingPlan::Create(1 << 16, 1, 1 << 16);
  auto window = ChunkWindow::Create(plan, 0);
  REQUIRE(window.ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::vector<float> values(plan.num_params());
    for (uint64_t k = 1; !stop.load(); ++k) {
      std::fill(values.begin(), values.end(), static_cast<float>(k % 1000000));
      (*window)->Publish(0, {k % 1000000, 0}, values);
    }
  });
  std::vector<float> out(plan.num_params());
  int taken = 0, refused = 0, torn = 0;
  const absl::Time end = absl::Now() + absl::Milliseconds(400);
  while (absl::Now() < end) {
    WindowedChunk seen;
    if (!(*window)->Read(0, 0, absl::MakeSpan(out), &seen)) {
      ++refused;
      continue;
    }
    ++taken;
    const float expected = static_cast<float>(seen.version);
    torn += std::any_of(out.begin(), out.end(), [&](float v) { return v != expected; }) ? 1 : 0;
  }
  stop.store(true);
  writer.join();
  INFO(taken << " reads taken, " << refused << " refused");
  CHECK(taken > 0);
  CHECK(refused > 0);
  CHECK(torn == 0);
}

}  // namespace
}  // namespace monsoon
