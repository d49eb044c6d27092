#include "core/process_setup.h"

#include <malloc.h>
#include <unistd.h>

#include <climits>

#include "absl/synchronization/mutex.h"

namespace monsoon {

void ApplyProcessSettings() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Per-thread arenas return freed pages to the kernel whatever the trim threshold, so gRPC's
  // threads would refault their receive buffers; one arena keeps them.
  mallopt(M_ARENA_MAX, 1);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

std::string SelfExePath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

}  // namespace monsoon
