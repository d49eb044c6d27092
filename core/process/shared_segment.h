// Shared memory between two processes of one host: a segment a parameter server creates for
// one client (an anonymous memfd, so it lives exactly as long as some process maps it or holds
// its descriptor, and a crash leaves nothing behind), which the client maps through the
// server's /proc/PID/fd entry. Reaching it needs the permissions of ptrace-reading the server:
// the same user, on the same host and in the same PID namespace.
#ifndef MONSOON_CORE_PROCESS_SHARED_SEGMENT_H_
#define MONSOON_CORE_PROCESS_SHARED_SEGMENT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/enum_names.h"

namespace monsoon {

// How a client moves chunk payloads to and from a server on its own host
// (`transport.local`): through a shared segment when it can (auto), always (shm: a server on
// another host, or a segment that cannot be mapped, is an error), or never (grpc). Every
// other call, and every call to another host, goes through gRPC.
enum class LocalTransport { kAuto, kShm, kGrpc };
inline constexpr NamedValue<LocalTransport> kLocalTransportValues[] = {
    {LocalTransport::kAuto, "auto"}, {LocalTransport::kShm, "shm"}, {LocalTransport::kGrpc, "grpc"}};
inline constexpr EnumNames<LocalTransport> kLocalTransportNames{"local transport",
                                                                kLocalTransportValues};

// What a process may do with a segment it maps.
enum class SegmentAccess { kReadWrite, kReadOnly };

class SharedSegment {
 public:
  // A fresh zero-filled segment of `bytes` (> 0), mapped read-write; its pages are allocated
  // as they are first written. With `others` kReadOnly the segment is sealed once mapped: every
  // later mapping, in any process, is read-only.
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Create(
      size_t bytes, SegmentAccess others = SegmentAccess::kReadWrite);
  // Maps the segment that process `pid` holds as descriptor `fd`; FailedPrecondition when it
  // cannot be opened or is not `bytes` long. With kReadOnly, data() must not be written.
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Attach(
      pid_t pid, int fd, size_t bytes, SegmentAccess access = SegmentAccess::kReadWrite);
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // The descriptor to publish (as /proc/getpid()/fd/fd()) to the process that attaches.
  int fd() const { return fd_; }

 private:
  SharedSegment(int fd, uint8_t* data, size_t size) : fd_(fd), data_(data), size_(size) {}

  const int fd_;
  uint8_t* const data_;
  const size_t size_;
};

// What makes two processes able to share a segment: this boot of the kernel
// (/proc/sys/kernel/random/boot_id) and this process's network and PID namespaces. Two
// processes with the same identity are on the same host as each other's sockets see it.
// Empty when any of them cannot be read: then no segment is shared.
std::string LocalHostIdentity();

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_SHARED_SEGMENT_H_
