// The host emulation of a CUDA device that tests/cuda_emulation runs the real CUDA backend on.
//
// - Device and pinned memory are exact-size host allocations filled with NaN, so that
//   AddressSanitizer sees every out-of-bounds access and a read of never-written memory shows.
//   Every kernel pointer argument, memcpy and memset range and cuBLAS operand extent is checked
//   against the live allocations of the right kind; a violation aborts with a message. A
//   copy's host side must be cudaMallocHost memory or memory the program registered
//   (cudaHostRegister) and has not unregistered; cudaHostUnregister first runs all queued
//   work, and cudaPointerGetAttributes tells the three kinds apart.
// - Streams are queues of work. Events record a stream's position; a wait makes a stream hold
//   until the recorded work is done. Work runs when the schedule says: lazy (only when a
//   synchronisation needs it), eager (at once, a grid's blocks in reverse order) or random
//   (seeded random progress of random streams after every call, blocks shuffled).
//   MONSOON_CUDA_EMULATION=lazy|eager|random[:SEED] picks it (default lazy).
// - Graphs: a stream capture records the work queued on its stream instead of running it, and
//   a launch of the instantiated graph queues that work again, as one item; a call CUDA
//   refuses while a capture is on (allocation, free, a synchronisation, an event on the
//   captured stream) fails and invalidates the capture.
// - A kernel launch runs every (block, thread) of the grid, one after another: a data race
//   between threads cannot show, nor can cuBLAS's summation order or any speed.
// - cudaMalloc can be made to fail (FailMallocAt, or MONSOON_CUDA_EMULATION_FAIL_MALLOC=N).
// - A dry run (MONSOON_CUDA_EMULATION_DRY=1) checks every call but runs no queued work, and its
//   device memory is address space only: for sizes too large to compute on the host.
// - With MONSOON_CUDA_EMULATION_REPORT=1 the process prints, at exit, "cuda_emulation: peak
//   device memory N bytes".
#ifndef MONSOON_TESTS_CUDA_EMULATION_EMULATOR_H_
#define MONSOON_TESTS_CUDA_EMULATION_EMULATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace cuda_emulation {

struct Stream;

enum class Schedule { kLazy, kEager, kRandom };
// Sets the schedule (and the random schedule's seed) for work queued from now on.
void SetSchedule(Schedule schedule, uint64_t seed = 1);
// The n-th cudaMalloc from now on (1 = the next) fails with cudaErrorMemoryAllocation; 0: none.
void FailMallocAt(int n);
// The most device memory live at once since the last ResetPeak, in bytes.
size_t PeakDeviceBytes();
void ResetPeak();

// Aborts the process naming what the emulated device refused (a CUDA program's undefined
// behaviour: a kernel given host memory, a copy past an allocation, ...).
[[noreturn]] void Violation(const std::string& what);
// Whether p points into a live device allocation.
bool IsDevicePointer(const void* p);

// Queues host work on `stream` as one item, as a library call on the device would (recorded
// by a capture, skipped by a dry run).
void QueueWork(Stream* stream, std::function<void()> work);
// Aborts unless [p, p + bytes) lies inside one live device allocation (bytes 0: any p).
void CheckDevice(const void* p, size_t bytes, const char* what);
// The same for `floats` floats at p.
inline void CheckDeviceFloats(const void* p, size_t floats, const char* what) {
  CheckDevice(p, floats * sizeof(float), what);
}
// The floats a column-major rows x cols operand with leading dimension ld spans.
size_t ColumnMajorExtent(int rows, int cols, int ld);
// An fp32 operand as the tensor cores of cuBLAS compute type `compute_type` take it: rounded to
// nearest, ties to even, at 10 (tf32) or 7 (bf16) mantissa bits; as it is for plain fp32.
float TensorCoreOperand(float x, int compute_type);
// Runs all queued work, as a call that synchronises the device does.
void SynchronizeDevice();
// Queues a kernel's whole grid on `stream`.
void QueueGrid(Stream* stream, unsigned blocks, std::function<void(unsigned block)> run_block);
// The order a grid's blocks run in, under the current schedule.
std::vector<unsigned> BlockOrder(unsigned blocks);
// Sets the error cudaGetLastError returns next (a launch's).
void SetLaunchError(int error);
// Sets the emulated thread's grid position.
void EnterThread(unsigned block, unsigned thread, unsigned blocks, unsigned threads);

template <class T>
void CheckKernelArgument(const T&, int) {}
template <class T>
void CheckKernelArgument(T* p, int index) {
  if (p != nullptr && !IsDevicePointer(p)) {
    Violation("kernel argument " + std::to_string(index) + " is not device memory");
  }
}

// What MONSOON_LAUNCH(kernel, blocks, threads, stream, args...) does on the host: checks the
// configuration and the pointer arguments now, and queues the grid.
template <class... Params, class... Args>
void Launch(unsigned blocks, unsigned threads, Stream* stream, void (*kernel)(Params...),
            Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel argument count");
  if (blocks == 0 || blocks > 2147483647u || threads == 0 || threads > 1024) {
    SetLaunchError(9);  // cudaErrorInvalidConfiguration
    return;
  }
  std::tuple<std::decay_t<Params>...> bound(static_cast<std::decay_t<Params>>(args)...);
  std::apply(
      [](const auto&... p) {
        int index = 0;
        (CheckKernelArgument(p, index++), ...);
      },
      bound);
  QueueGrid(stream, blocks, [=](unsigned block) {
    for (unsigned t = 0; t < threads; ++t) {
      EnterThread(block, t, blocks, threads);
      std::apply(kernel, bound);
    }
  });
}

}  // namespace cuda_emulation

#endif  // MONSOON_TESTS_CUDA_EMULATION_EMULATOR_H_
