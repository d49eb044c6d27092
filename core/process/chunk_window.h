// A parameter server's chunks as its clients on the same host read them without a call: a
// shared segment (shared_segment.h) the server writes and its clients map read-only. Each of
// the server's chunks has a 64-byte header, then its float32 values, padded to 64 bytes.
//
// The header's sequence word is a seqlock: the server makes it odd before it changes the chunk
// and even again after, one writer at a time (it holds the chunk's lock). A reader copies the
// chunk between two reads of the word and keeps the copy only when both saw the same even,
// non-zero value; so a copy that overlapped a write, or a chunk never published, or one a
// killed server left half-written, is never taken. A reader that cannot get a clean copy
// asks the server instead, through a call.
#ifndef MONSOON_CORE_PROCESS_CHUNK_WINDOW_H_
#define MONSOON_CORE_PROCESS_CHUNK_WINDOW_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/process/shared_segment.h"
#include "core/sharding_plan.h"

namespace monsoon {

// What a read of a chunk saw, besides its values.
struct WindowedChunk {
  uint64_t version = 0;        // updates applied to the chunk
  uint64_t slowest_clock = 0;  // fewest pushes any live worker had made to it
};

class ChunkWindow {
 public:
  // The server's side: a fresh window for server `server`'s chunks of `plan`, which other
  // processes can map only read-only. No chunk reads until it is first published.
  static absl::StatusOr<std::unique_ptr<ChunkWindow>> Create(const ShardingPlan& plan, int server);
  // A client's side: maps, read-only, the window that process `pid` holds as descriptor `fd`
  // for server `server` of `plan`; FailedPrecondition when it cannot, or when it is not
  // `bytes` long as that layout says.
  static absl::StatusOr<std::unique_ptr<ChunkWindow>> Attach(const ShardingPlan& plan, int server,
                                                             pid_t pid, int fd, size_t bytes);

  // The window's bytes for `plan`'s server `server`.
  static size_t BytesFor(const ShardingPlan& plan, int server);

  // The descriptor and size a client attaches (in this process).
  int fd() const { return memory_->fd(); }
  size_t bytes() const { return memory_->size(); }

  // Writes chunk `id`'s header and, when `values` is not empty, its values (exactly the
  // chunk's size). The caller serialises writes of one chunk.
  void Publish(int id, const WindowedChunk& header, absl::Span<const float> values);
  // Copies chunk `id` into `out` (exactly its size) when it has been published at a version
  // of at least `min_version` and no write overlapped the copy; false otherwise, with `out`
  // unspecified. Never blocks.
  bool Read(int id, uint64_t min_version, absl::Span<float> out, WindowedChunk* header) const;

 private:
  struct alignas(64) Header {
    std::atomic<uint64_t> sequence;  // odd while being written; 0 until first published
    std::atomic<uint64_t> version;
    std::atomic<uint64_t> slowest_clock;
  };

  ChunkWindow(std::unique_ptr<SharedSegment> memory, std::vector<size_t> offsets,
              std::vector<size_t> sizes);
  // The byte offset of each chunk's header, by chunk id (unused for other servers' chunks).
  static std::vector<size_t> Offsets(const ShardingPlan& plan, int server, size_t* bytes);
  Header* HeaderOf(int id) const {
    return reinterpret_cast<Header*>(memory_->data() + offsets_[id]);
  }
  float* ValuesOf(int id) const {
    return reinterpret_cast<float*>(memory_->data() + offsets_[id] + sizeof(Header));
  }

  const std::unique_ptr<SharedSegment> memory_;
  const std::vector<size_t> offsets_;
  const std::vector<size_t> sizes_;  // floats, by chunk id
};

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_CHUNK_WINDOW_H_
