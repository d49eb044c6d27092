#include "core/process/chunk_window.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

constexpr size_t kAlign = 64;

size_t RoundUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Each chunk's size in floats, by chunk id.
std::vector<size_t> Sizes(const ShardingPlan& plan) {
  std::vector<size_t> sizes(plan.num_chunks(), 0);
  for (const Chunk& c : plan.chunks()) sizes[c.id] = c.size;
  return sizes;
}

}  // namespace

ChunkWindow::ChunkWindow(std::unique_ptr<SharedSegment> memory, std::vector<size_t> offsets,
                         std::vector<size_t> sizes)
    : memory_(std::move(memory)), offsets_(std::move(offsets)), sizes_(std::move(sizes)) {}

std::vector<size_t> ChunkWindow::Offsets(const ShardingPlan& plan, int server, size_t* bytes) {
  std::vector<size_t> offsets(plan.num_chunks(), 0);
  *bytes = 0;
  for (const Chunk& c : plan.ChunksOf(server)) {
    offsets[c.id] = *bytes;
    *bytes += sizeof(Header) + RoundUp(c.size * sizeof(float));
  }
  return offsets;
}

size_t ChunkWindow::BytesFor(const ShardingPlan& plan, int server) {
  size_t bytes = 0;
  Offsets(plan, server, &bytes);
  return bytes;
}

absl::StatusOr<std::unique_ptr<ChunkWindow>> ChunkWindow::Create(const ShardingPlan& plan,
                                                                 int server) {
  size_t bytes = 0;
  std::vector<size_t> offsets = Offsets(plan, server, &bytes);
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<SharedSegment> memory,
                           SharedSegment::Create(bytes, SegmentAccess::kReadOnly));
  return std::unique_ptr<ChunkWindow>(
      new ChunkWindow(std::move(memory), std::move(offsets), Sizes(plan)));
}

absl::StatusOr<std::unique_ptr<ChunkWindow>> ChunkWindow::Attach(const ShardingPlan& plan,
                                                                 int server, pid_t pid, int fd,
                                                                 size_t bytes) {
  size_t expected = 0;
  std::vector<size_t> offsets = Offsets(plan, server, &expected);
  if (bytes != expected) {
    return absl::FailedPreconditionError(
        absl::StrCat("the server's chunk window is ", bytes, " bytes; its chunks need ", expected));
  }
  MONSOON_ASSIGN_OR_RETURN(std::unique_ptr<SharedSegment> memory,
                           SharedSegment::Attach(pid, fd, bytes, SegmentAccess::kReadOnly));
  return std::unique_ptr<ChunkWindow>(
      new ChunkWindow(std::move(memory), std::move(offsets), Sizes(plan)));
}

void ChunkWindow::Publish(int id, const WindowedChunk& header, absl::Span<const float> values) {
  Header* h = HeaderOf(id);
  const uint64_t sequence = h->sequence.load(std::memory_order_relaxed);
  h->sequence.store(sequence + 1, std::memory_order_relaxed);
  // Orders the odd sequence before every write below (a reader that sees one of them sees it).
  std::atomic_thread_fence(std::memory_order_release);
  h->version.store(header.version, std::memory_order_relaxed);
  h->slowest_clock.store(header.slowest_clock, std::memory_order_relaxed);
  if (!values.empty()) std::memcpy(ValuesOf(id), values.data(), sizes_[id] * sizeof(float));
  h->sequence.store(sequence + 2, std::memory_order_release);
}

bool ChunkWindow::Read(int id, uint64_t min_version, absl::Span<float> out,
                       WindowedChunk* header) const {
  if (id < 0 || static_cast<size_t>(id) >= sizes_.size() || out.size() != sizes_[id]) {
    return false;
  }
  const Header* h = HeaderOf(id);
  const uint64_t before = h->sequence.load(std::memory_order_acquire);
  if (before == 0 || before % 2 == 1) return false;
  header->version = h->version.load(std::memory_order_relaxed);
  header->slowest_clock = h->slowest_clock.load(std::memory_order_relaxed);
  if (header->version < min_version) return false;
  std::memcpy(out.data(), ValuesOf(id), out.size() * sizeof(float));
  // Orders the copy's reads before the second read of the sequence.
  std::atomic_thread_fence(std::memory_order_acquire);
  return h->sequence.load(std::memory_order_relaxed) == before;
}

}  // namespace monsoon
