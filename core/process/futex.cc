#include "core/process/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace monsoon {
namespace {

uint32_t* Address(const std::atomic<uint32_t>& word) {
  return reinterpret_cast<uint32_t*>(const_cast<std::atomic<uint32_t>*>(&word));
}

}  // namespace

void FutexWait(const std::atomic<uint32_t>& word, uint32_t expected, absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return;
  const timespec relative = absl::ToTimespec(timeout);
  syscall(SYS_futex, Address(word), FUTEX_WAIT, expected, &relative, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, Address(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void Ring(std::atomic<uint32_t>& bell) {
  bell.fetch_add(1, std::memory_order_release);
  FutexWakeAll(bell);
}

}  // namespace monsoon
