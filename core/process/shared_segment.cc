#include "core/process/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace monsoon {
namespace {

absl::Status ErrnoError(absl::string_view what) {
  return absl::FailedPreconditionError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::StatusOr<uint8_t*> MapShared(int fd, size_t bytes, SegmentAccess access) {
  const int protection = access == SegmentAccess::kReadOnly ? PROT_READ : PROT_READ | PROT_WRITE;
  void* data = mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) return ErrnoError(absl::StrCat("mmap of a ", bytes, "-byte segment"));
  return static_cast<uint8_t*>(data);
}

// The inode of /proc/self/ns/KIND: equal for two processes in the same namespace.
std::string NamespaceInode(const char* kind) {
  struct stat st {};
  if (stat(absl::StrCat("/proc/self/ns/", kind).c_str(), &st) != 0) return "";
  return absl::StrCat(st.st_ino);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Create(size_t bytes,
                                                                     SegmentAccess others) {
  if (bytes == 0) return absl::InvalidArgumentError("a shared segment of 0 bytes");
  const bool seal = others == SegmentAccess::kReadOnly;
  const int fd = memfd_create("monsoon-segment", MFD_CLOEXEC | (seal ? MFD_ALLOW_SEALING : 0));
  if (fd < 0) return ErrnoError("memfd_create");
  absl::StatusOr<uint8_t*> data =
      ftruncate(fd, static_cast<off_t>(bytes)) == 0
          ? MapShared(fd, bytes, SegmentAccess::kReadWrite)
          : ErrnoError(absl::StrCat("sizing a shared segment to ", bytes));
  // Sealed after this process's own mapping, which stays writable.
  if (data.ok() && seal &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) !=
          0) {
    munmap(*data, bytes);
    data = ErrnoError("sealing a shared segment");
  }
  if (!data.ok()) {
    close(fd);
    return data.status();
  }
  return std::unique_ptr<SharedSegment>(new SharedSegment(fd, *data, bytes));
}

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Attach(pid_t pid, int fd,
                                                                     size_t bytes,
                                                                     SegmentAccess access) {
  const std::string path = absl::StrCat("/proc/", pid, "/fd/", fd);
  const int flags = access == SegmentAccess::kReadOnly ? O_RDONLY : O_RDWR;
  const int own = open(path.c_str(), flags | O_CLOEXEC);
  if (own < 0) return ErrnoError(absl::StrCat("opening ", path));
  struct stat st {};
  if (fstat(own, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(own);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is ", st.st_size, " bytes, not the segment's ", bytes));
  }
  absl::StatusOr<uint8_t*> data = MapShared(own, bytes, access);
  if (!data.ok()) {
    close(own);
    return data.status();
  }
  return std::unique_ptr<SharedSegment>(new SharedSegment(own, *data, bytes));
}

SharedSegment::~SharedSegment() {
  munmap(data_, size_);
  close(fd_);
}

std::string LocalHostIdentity() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(in, boot);
  const std::string net = NamespaceInode("net"), pid = NamespaceInode("pid");
  if (boot.empty() || net.empty() || pid.empty()) return "";
  return absl::StrCat(boot, "/net:", net, "/pid:", pid);
}

}  // namespace monsoon
