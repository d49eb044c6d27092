// Process-wide settings for Monsoon's binaries, applied once by main() before any thread starts.
#ifndef MONSOON_CORE_PROCESS_PROCESS_SETUP_H_
#define MONSOON_CORE_PROCESS_PROCESS_SETUP_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace monsoon {

// - Keeps large message buffers (chunks of up to 32 MiB) in malloc's heap instead of fresh
//   mmap()s, and stops the heap from being trimmed back to the kernel: otherwise every chunk
//   sent or received pays page faults and page zeroing (measured: ~12% of a 64 MiB push/pull).
// - Turns off absl::Mutex's deadlock detection. Debian builds Abseil without NDEBUG, so it is
//   on by default: every lock and unlock, gRPC's own included, then updates a process-wide lock
//   graph under one global spin lock.
// - Raises the descriptor limit (RaiseDescriptorLimit).
void ApplyProcessSettings();

// Flushes denormal floats to zero, in arithmetic's results and inputs, in this thread and in
// every thread it starts afterwards (x86's FTZ and DAZ; elsewhere nothing). Where a parameter's
// gradient stays zero (the weights of a ReLU unit no input activates), an optimizer's decaying
// state (momentum's velocity, Adam's moments) comes to rest at the smallest denormal instead of
// zero, and x86 cores, Intel's above all, compute on denormals many times slower: a server's
// whole apply slows with them. Monsoon's own processes call it in main(); the Python module
// does not, since it would change the arithmetic of the program that imports it.
void FlushDenormalsToZero();

// A variable of the environment that takes effect only when a process starts, and its value.
struct StartupVariable {
  std::string name;
  std::string value;
};

// Transparent huge pages for this process and every process it starts (roles, worker
// programs, a simulated cluster's in-process workers): GLIBC_TUNABLES with
// glibc.malloc.hugetlb=1 added, so that malloc advises the kernel to back its heap and its
// mmap()s with 2 MiB pages (weights, gradients and data otherwise fault in 4 KiB at a time).
// None when the caller had already chosen glibc.malloc.hugetlb (left as it is).
std::optional<StartupVariable> HugePagesVariable();

// Sets the `variables` present in this process's environment, which every process it starts
// inherits, and re-executes this program's file by its path (the process keeps its name and
// pid) with the same arguments, so that they take effect here too. Returns when none is
// present, or when the re-execution fails (the processes it starts still inherit them). Call
// first in main().
void RestartWith(std::initializer_list<std::optional<StartupVariable>> variables, char** argv);

// Raises this process's open-file limit (RLIMIT_NOFILE) to its hard limit: a server holds a
// descriptor per connection.
void RaiseDescriptorLimit();

// This process's file descriptors: how many are open, the limit, and whether it has run out
// (a new one cannot be opened).
struct DescriptorUse {
  int64_t open = 0;
  int64_t limit = 0;
  bool exhausted = false;
};
DescriptorUse CountDescriptors();

// The memory this process's job may use on this host, and where that bound comes from: the
// least of the machine's physical memory ("this machine's"), the cgroup's memory.max ("this
// cgroup's"), SLURM's SLURM_MEM_PER_NODE ("the SLURM allocation's") and RLIMIT_AS ("the
// address-space limit's").
struct MemoryLimit {
  uint64_t bytes = 0;
  std::string source;
};
MemoryLimit HostMemoryLimit();

// The path of this process's executable (/proc/self/exe); "" when it cannot be read.
std::string SelfExePath();

}  // namespace monsoon

#endif  // MONSOON_CORE_PROCESS_PROCESS_SETUP_H_
