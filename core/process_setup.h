// Process-wide settings for Monsoon's binaries, applied once by main().
#ifndef MONSOON_CORE_PROCESS_SETUP_H_
#define MONSOON_CORE_PROCESS_SETUP_H_

namespace monsoon {

// Keeps large message buffers (chunks of up to 32 MiB) in malloc's heap instead of fresh
// mmap()s, and stops the heap from being trimmed back to the kernel: otherwise every chunk
// sent or received pays page faults and page zeroing (measured: ~12% of a 64 MiB push/pull).
void TuneAllocatorForLargeMessages();

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_SETUP_H_
