// Waiting on a 32-bit word that another process (or thread) changes, without spinning: the
// word may live in a shared segment (core/process/shared_segment.h), so the futexes are the
// shared kind.
#ifndef MONSOON_CORE_PROCESS_FUTEX_H_
#define MONSOON_CORE_PROCESS_FUTEX_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace monsoon {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a futex word is a plain, lock-free 32-bit atomic");

// Sleeps while *word holds `expected`, for at most `timeout`. May return early (a wake-up, a
// signal, a spurious one): callers re-check their condition in a loop.
void FutexWait(const std::atomic<uint32_t>& word, uint32_t expected, absl::Duration timeout);
// Wakes every waiter on `word` (after the caller changed it).
void FutexWakeAll(std::atomic<uint32_t>& word);
// Rings a doorbell: increments `bell` (release) and wakes every waiter on it.
void Ring(std::atomic<uint32_t>& bell);

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_FUTEX_H_
