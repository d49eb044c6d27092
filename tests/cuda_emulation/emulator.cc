#include "tests/cuda_emulation/emulator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>

#include <sys/mman.h>

#include "cublas_v2.h"
#include "cuda_runtime.h"

thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;

namespace cuda_emulation {

// One piece of queued work; it may not start before `waits_on` has done `ticket` items.
struct Work {
  std::function<void()> run;
  Stream* waits_on = nullptr;
  uint64_t ticket = 0;
};

struct Stream {
  std::deque<Work> queue;
  uint64_t enqueued = 0;  // items ever queued
  uint64_t done = 0;      // items run
};

// What a stream capture recorded: its work, in order.
struct Graph {
  std::vector<std::function<void()>> work;
};
struct GraphExec {
  std::vector<std::function<void()>> work;
};

// A record's position: complete once `stream` has done `ticket` items.
struct Event {
  Stream* stream = nullptr;
  uint64_t ticket = 0;
};

struct Blas {
  Stream* stream = nullptr;
};

namespace {

// kPinned: page-locked host memory of cudaMallocHost's; kRegistered: the program's own host
// memory page-locked by cudaHostRegister. Copies take either as their host side.
enum class Kind { kDevice, kPinned, kRegistered };
struct Allocation {
  size_t bytes;
  Kind kind;
};

// The emulated device. The backend is used by one thread at a time; the lock keeps the
// emulator's books straight if tests use several.
struct Device {
  std::recursive_mutex mu;
  std::map<uintptr_t, Allocation> allocations;  // by address
  // In creation order, so that every schedule is the same from run to run (an order by
  // address would change with the heap): a device-wide synchronisation drains them in turn,
  // the backend's compute stream before its copy stream.
  std::vector<Stream*> streams;
  Stream default_stream;
  Schedule schedule = Schedule::kLazy;
  std::mt19937_64 rng{1};
  int malloc_calls = 0;
  int fail_malloc_at = 0;  // that call number fails; 0: none
  size_t device_bytes = 0, peak_bytes = 0;
  int launch_error = 0;
  bool dry = false;  // check calls, run no work; device memory is address space only
  // The stream being captured (one at a time), what it has recorded, and whether a call that
  // cannot be captured has invalidated the capture.
  Stream* capturing = nullptr;
  std::vector<std::function<void()>> captured;
  bool capture_invalidated = false;
};

Device& Dev();

void ReportPeak() {
  std::fprintf(stderr, "cuda_emulation: peak device memory %zu bytes\n", Dev().peak_bytes);
}

Device& Dev() {
  static Device* device = [] {
    auto* d = new Device;
    d->streams.push_back(&d->default_stream);
    if (const char* s = std::getenv("MONSOON_CUDA_EMULATION")) {
      const std::string spec = s;
      const size_t colon = spec.find(':');
      const std::string name = spec.substr(0, colon);
      d->schedule = name == "eager"    ? Schedule::kEager
                    : name == "random" ? Schedule::kRandom
                                       : Schedule::kLazy;
      if (colon != std::string::npos) d->rng.seed(std::stoull(spec.substr(colon + 1)));
    }
    if (const char* n = std::getenv("MONSOON_CUDA_EMULATION_FAIL_MALLOC")) {
      d->fail_malloc_at = std::atoi(n);
    }
    d->dry = std::getenv("MONSOON_CUDA_EMULATION_DRY") != nullptr;
    if (std::getenv("MONSOON_CUDA_EMULATION_REPORT") != nullptr) std::atexit(ReportPeak);
    return d;
  }();
  return *device;
}

Stream* Resolve(Stream* s) { return s == nullptr ? &Dev().default_stream : s; }

// The live allocation holding [p, p + bytes), or nullptr.
const Allocation* Find(const void* p, size_t bytes, uintptr_t* base) {
  Device& d = Dev();
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = d.allocations.upper_bound(a);
  if (it == d.allocations.begin()) return nullptr;
  --it;
  if (a + bytes > it->first + it->second.bytes || a < it->first) return nullptr;
  *base = it->first;
  return &it->second;
}

void CheckRange(const void* p, size_t bytes, Kind kind, const char* what) {
  uintptr_t base = 0;
  const Allocation* found = Find(p, bytes, &base);
  const bool host_side =
      kind == Kind::kPinned && found != nullptr && found->kind == Kind::kRegistered;
  if (found == nullptr || (found->kind != kind && !host_side)) {
    Violation(std::string(what) + ": " + std::to_string(bytes) + " bytes at " +
              std::to_string(reinterpret_cast<uintptr_t>(p)) + " are not inside one live " +
              (kind == Kind::kDevice ? "device" : "pinned host") + " allocation");
  }
}

void RunFront(Stream* s, int depth);

// Runs `s` until it has done `ticket` items.
void RunUntil(Stream* s, uint64_t ticket, int depth) {
  if (depth > 64) Violation("streams wait on each other in a cycle: this would hang");
  while (s->done < ticket) RunFront(s, depth + 1);
}

void RunFront(Stream* s, int depth) {
  Work& w = s->queue.front();
  if (w.waits_on != nullptr) RunUntil(w.waits_on, w.ticket, depth);
  std::function<void()> run = std::move(s->queue.front().run);
  s->queue.pop_front();
  if (run) run();
  ++s->done;
}

void Drain(Stream* s) { RunUntil(s, s->enqueued, 0); }

bool Live(Stream* s) {
  const auto& streams = Dev().streams;
  return std::find(streams.begin(), streams.end(), s) != streams.end();
}

void DrainAll() {
  for (Stream* s : Dev().streams) Drain(s);
}

// Runs the front of `s` if what it waits for is done; false when it cannot.
bool TryRunFront(Stream* s) {
  if (s->queue.empty()) return false;
  const Work& w = s->queue.front();
  if (w.waits_on != nullptr && w.waits_on->done < w.ticket) return false;
  RunFront(s, 0);
  return true;
}

// What the schedule does after each call that queues work.
void Progress() {
  Device& d = Dev();
  if (d.schedule == Schedule::kEager) {
    for (bool moved = true; moved;) {
      moved = false;
      for (Stream* s : d.streams) moved = TryRunFront(s) || moved;
    }
  } else if (d.schedule == Schedule::kRandom) {
    std::vector<Stream*> streams(d.streams.begin(), d.streams.end());
    for (int steps = static_cast<int>(d.rng() % 4); steps > 0; --steps) {
      TryRunFront(streams[d.rng() % streams.size()]);
    }
  }
}

// A call that cannot be captured, made while a capture is on (CUDA's thread-local capture
// mode: the backend captures from its one thread): it invalidates the capture and fails.
bool RefusedInCapture() {
  Device& d = Dev();
  if (d.capturing == nullptr) return false;
  d.capture_invalidated = true;
  return true;
}

void Enqueue(Stream* stream, Work work) {
  Stream* s = Resolve(stream);
  if (Dev().dry) work.run = nullptr;
  if (!Live(s)) Violation("work queued on a destroyed stream");
  if (s == Dev().capturing) {
    // Recorded, not run; a wait on another stream's event is beyond this emulation's graphs.
    if (work.waits_on != nullptr) Dev().capture_invalidated = true;
    Dev().captured.push_back(std::move(work.run));
    return;
  }
  s->queue.push_back(std::move(work));
  ++s->enqueued;
  Progress();
}

cudaError_t Allocate(void** p, size_t bytes, Kind kind) {
  Device& d = Dev();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  if (kind == Kind::kDevice && ++d.malloc_calls == d.fail_malloc_at) {
    return cudaErrorMemoryAllocation;
  }
  if (bytes == 0) Violation("an allocation of 0 bytes");
  void* q = nullptr;
  if (d.dry && kind == Kind::kDevice) {
    q = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (q == MAP_FAILED) return cudaErrorMemoryAllocation;
  } else {
    q = std::malloc(bytes);
    std::memset(q, 0xff, bytes);  // every float NaN until written
  }
  d.allocations[reinterpret_cast<uintptr_t>(q)] = {bytes, kind};
  if (kind == Kind::kDevice) {
    d.device_bytes += bytes;
    d.peak_bytes = std::max(d.peak_bytes, d.device_bytes);
  }
  *p = q;
  return cudaSuccess;
}

cudaError_t Release(void* p, Kind kind) {
  Device& d = Dev();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  if (p == nullptr) return cudaSuccess;
  auto it = d.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == d.allocations.end() || it->second.kind != kind) {
    Violation("free of a pointer that is not a live allocation of its kind");
  }
  DrainAll();  // cudaFree and cudaFreeHost synchronise the device
  if (kind == Kind::kDevice) d.device_bytes -= it->second.bytes;
  if (d.dry && kind == Kind::kDevice) {
    munmap(p, it->second.bytes);
  } else {
    std::free(p);
  }
  d.allocations.erase(it);
  return cudaSuccess;
}

}  // namespace

void SetSchedule(Schedule schedule, uint64_t seed) {
  Dev().schedule = schedule;
  Dev().rng.seed(seed);
}
void FailMallocAt(int n) {
  Dev().fail_malloc_at = n == 0 ? 0 : Dev().malloc_calls + n;
}
size_t PeakDeviceBytes() { return Dev().peak_bytes; }
void ResetPeak() { Dev().peak_bytes = Dev().device_bytes; }

void Violation(const std::string& what) {
  std::fprintf(stderr, "cuda_emulation: VIOLATION: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

bool IsDevicePointer(const void* p) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  uintptr_t base = 0;
  const Allocation* a = Find(p, 1, &base);
  return a != nullptr && a->kind == Kind::kDevice;
}

void QueueWork(Stream* stream, std::function<void()> work) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  Enqueue(stream, {std::move(work)});
}

void CheckDevice(const void* p, size_t bytes, const char* what) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (bytes > 0) CheckRange(p, bytes, Kind::kDevice, what);
}

void SynchronizeDevice() {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  DrainAll();
}

void QueueGrid(Stream* stream, unsigned blocks, std::function<void(unsigned block)> run_block) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  Enqueue(stream, {[blocks, run_block] {
                     for (unsigned b : BlockOrder(blocks)) run_block(b);
                   }});
}

std::vector<unsigned> BlockOrder(unsigned blocks) {
  std::vector<unsigned> order(blocks);
  std::iota(order.begin(), order.end(), 0u);
  Device& d = Dev();
  if (d.schedule == Schedule::kEager) std::reverse(order.begin(), order.end());
  if (d.schedule == Schedule::kRandom) std::shuffle(order.begin(), order.end(), d.rng);
  return order;
}

void SetLaunchError(int error) { Dev().launch_error = error; }

void EnterThread(unsigned block, unsigned thread, unsigned blocks, unsigned threads) {
  blockIdx = dim3(block);
  threadIdx = dim3(thread);
  blockDim = dim3(threads);
  gridDim = dim3(blocks);
}

}  // namespace cuda_emulation

using cuda_emulation::ColumnMajorExtent;
using cuda_emulation::Dev;
using cuda_emulation::Kind;

// cuBLAS, from its column-major definitions: an m x n matrix X with leading dimension ld
// holds X(i, j) at x[i + j * ld]. Argument checks as cuBLAS documents them; each operand's
// extent must lie in one live device allocation; products accumulate in double.

size_t cuda_emulation::ColumnMajorExtent(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : static_cast<size_t>(cols - 1) * ld + rows;
}

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cuda_emulation::Blas;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  cuda_emulation::DrainAll();  // cublasDestroy synchronises the device
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS_INVALID_VALUE";
  }
}

float cuda_emulation::TensorCoreOperand(float x, int compute_type) {
  const int dropped = compute_type == CUBLAS_COMPUTE_32F_FAST_TF32   ? 13
                      : compute_type == CUBLAS_COMPUTE_32F_FAST_16BF ? 16
                                                                     : 0;
  if (dropped == 0 || !std::isfinite(x)) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits += (1u << (dropped - 1)) - 1 + ((bits >> dropped) & 1);
  bits &= ~((1u << dropped) - 1);
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha_v,
                            const void* a_v, cudaDataType_t a_type, int lda, const void* b_v,
                            cudaDataType_t b_type, int ldb, const void* beta_v, void* c_v,
                            cudaDataType_t c_type, int ldc, cublasComputeType_t compute_type,
                            cublasGemmAlgo_t algo) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa == CUBLAS_OP_T, tb = transb == CUBLAS_OP_T;
  const int rows_a = ta ? k : m, cols_a = ta ? m : k, rows_b = tb ? n : k, cols_b = tb ? k : n;
  const bool known_type = compute_type == CUBLAS_COMPUTE_32F ||
                          compute_type == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                          compute_type == CUBLAS_COMPUTE_32F_FAST_16BF;
  if (m < 0 || n < 0 || k < 0 || lda < std::max(1, rows_a) || ldb < std::max(1, rows_b) ||
      ldc < std::max(1, m) || a_type != CUDA_R_32F || b_type != CUDA_R_32F ||
      c_type != CUDA_R_32F || !known_type || algo != CUBLAS_GEMM_DEFAULT) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const auto* a = static_cast<const float*>(a_v);
  const auto* b = static_cast<const float*>(b_v);
  auto* c = static_cast<float*>(c_v);
  cuda_emulation::CheckDeviceFloats(a, ColumnMajorExtent(rows_a, cols_a, lda), "cublasGemmEx A");
  cuda_emulation::CheckDeviceFloats(b, ColumnMajorExtent(rows_b, cols_b, ldb), "cublasGemmEx B");
  cuda_emulation::CheckDeviceFloats(c, ColumnMajorExtent(m, n, ldc), "cublasGemmEx C");
  // Host pointer mode: alpha and beta are read at the call.
  const float al = *static_cast<const float*>(alpha_v), be = *static_cast<const float*>(beta_v);
  cuda_emulation::Enqueue(handle->stream, {[=] {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int p = 0; p < k; ++p) {
          const float x = ta ? a[p + static_cast<size_t>(i) * lda] : a[i + static_cast<size_t>(p) * lda];
          const float y = tb ? b[j + static_cast<size_t>(p) * ldb] : b[p + static_cast<size_t>(j) * ldb];
          sum += static_cast<double>(cuda_emulation::TensorCoreOperand(x, compute_type)) *
                 cuda_emulation::TensorCoreOperand(y, compute_type);
        }
        float& out = c[i + static_cast<size_t>(j) * ldc];
        out = static_cast<float>(al * sum + (be == 0.0f ? 0.0 : static_cast<double>(be) * out));
      }
    }
  }});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                           const float* alpha, const float* a, int lda, const float* x, int incx,
                           const float* beta, float* y, int incy) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || lda < std::max(1, m) || incx == 0 || incy == 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const bool t = trans == CUBLAS_OP_T;
  const int in = t ? m : n, out = t ? n : m;
  if (incx < 0 || incy < 0) return CUBLAS_STATUS_INVALID_VALUE;  // not emulated
  cuda_emulation::CheckDeviceFloats(a, ColumnMajorExtent(m, n, lda), "cublasSgemv A");
  cuda_emulation::CheckDeviceFloats(x, ColumnMajorExtent(1, in, incx), "cublasSgemv x");
  cuda_emulation::CheckDeviceFloats(y, ColumnMajorExtent(1, out, incy), "cublasSgemv y");
  const float al = *alpha, be = *beta;
  cuda_emulation::Enqueue(handle->stream, {[=] {
    for (int i = 0; i < out; ++i) {
      double sum = 0;
      for (int p = 0; p < in; ++p) {
        const float v = t ? a[p + static_cast<size_t>(i) * lda] : a[i + static_cast<size_t>(p) * lda];
        sum += static_cast<double>(v) * x[static_cast<size_t>(p) * incx];
      }
      float& r = y[static_cast<size_t>(i) * incy];
      r = static_cast<float>(al * sum + (be == 0.0f ? 0.0 : static_cast<double>(be) * r));
    }
  }});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSaxpy(cublasHandle_t handle, int n, const float* alpha, const float* x,
                           int incx, float* y, int incy) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n <= 0) return CUBLAS_STATUS_SUCCESS;
  if (incx <= 0 || incy <= 0) return CUBLAS_STATUS_INVALID_VALUE;  // not emulated
  cuda_emulation::CheckDeviceFloats(x, ColumnMajorExtent(1, n, incx), "cublasSaxpy x");
  cuda_emulation::CheckDeviceFloats(y, ColumnMajorExtent(1, n, incy), "cublasSaxpy y");
  const float al = *alpha;
  cuda_emulation::Enqueue(handle->stream, {[=] {
    for (int i = 0; i < n; ++i) y[static_cast<size_t>(i) * incy] += al * x[static_cast<size_t>(i) * incx];
  }});
  return CUBLAS_STATUS_SUCCESS;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  std::snprintf(prop->name, sizeof(prop->name), "host emulation");
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidValue; }
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    default:
      return "emulated CUDA error";
  }
}
cudaError_t cudaGetLastError() {
  const int error = Dev().launch_error;
  Dev().launch_error = 0;
  return static_cast<cudaError_t>(error);
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
  return cuda_emulation::Allocate(p, bytes, Kind::kDevice);
}
cudaError_t cudaFree(void* p) { return cuda_emulation::Release(p, Kind::kDevice); }
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return cuda_emulation::Allocate(p, bytes, Kind::kPinned);
}
cudaError_t cudaFreeHost(void* p) { return cuda_emulation::Release(p, Kind::kPinned); }

cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned /*flags*/) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (cuda_emulation::RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  if (p == nullptr || bytes == 0) return cudaErrorInvalidValue;
  auto& allocations = Dev().allocations;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  auto next = allocations.lower_bound(begin);
  const bool overlaps_next = next != allocations.end() && next->first < begin + bytes;
  const bool overlaps_previous =
      next != allocations.begin() && std::prev(next)->first + std::prev(next)->second.bytes > begin;
  if (overlaps_next || overlaps_previous) return cudaErrorHostMemoryAlreadyRegistered;
  allocations[begin] = {bytes, Kind::kRegistered};
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void* p) {
  cuda_emulation::Device& d = Dev();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (cuda_emulation::RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  auto it = d.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == d.allocations.end() || it->second.kind != Kind::kRegistered) {
    return cudaErrorHostMemoryNotRegistered;
  }
  cuda_emulation::DrainAll();  // no queued copy may reach the memory once it is pageable again
  d.allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (attributes == nullptr) return cudaErrorInvalidValue;
  uintptr_t base = 0;
  const cuda_emulation::Allocation* a = cuda_emulation::Find(p, 1, &base);
  *attributes = {cudaMemoryTypeUnregistered, 0, nullptr, nullptr};
  if (a != nullptr) {
    attributes->type = a->kind == Kind::kDevice ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
    (a->kind == Kind::kDevice ? attributes->devicePointer : attributes->hostPointer) =
        const_cast<void*>(p);
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
      kind != cudaMemcpyDeviceToDevice) {
    return cudaErrorInvalidValue;
  }
  cuda_emulation::CheckRange(dst, bytes,
                             kind == cudaMemcpyDeviceToHost ? Kind::kPinned : Kind::kDevice,
                             "cudaMemcpyAsync destination");
  cuda_emulation::CheckRange(src, bytes,
                             kind == cudaMemcpyHostToDevice ? Kind::kPinned : Kind::kDevice,
                             "cudaMemcpyAsync source");
  cuda_emulation::Enqueue(stream, {[dst, src, bytes] { std::memcpy(dst, src, bytes); }});
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (bytes == 0) return cudaSuccess;
  cuda_emulation::CheckRange(p, bytes, Kind::kDevice, "cudaMemsetAsync");
  cuda_emulation::Enqueue(stream, {[p, value, bytes] { std::memset(p, value, bytes); }});
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = new cuda_emulation::Stream;
  Dev().streams.push_back(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  return cudaStreamCreate(stream);
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!cuda_emulation::Live(stream)) return cudaErrorInvalidResourceHandle;
  cuda_emulation::Drain(stream);  // queued work still completes
  auto& streams = Dev().streams;
  streams.erase(std::find(streams.begin(), streams.end(), stream));
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (cuda_emulation::RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  cuda_emulation::Drain(cuda_emulation::Resolve(stream));
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (event == nullptr) return cudaErrorInvalidResourceHandle;
  // The wait is on the event's latest record as of this call.
  cuda_emulation::Enqueue(stream, {nullptr, event->stream, event->ticket});
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new cuda_emulation::Event;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  return cudaEventCreate(event);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  cuda_emulation::Stream* s = cuda_emulation::Resolve(stream);
  if (s == Dev().capturing && cuda_emulation::RefusedInCapture()) {
    return cudaErrorStreamCaptureUnsupported;  // an event inside a graph: not emulated
  }
  event->stream = s;
  event->ticket = s->enqueued;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (cuda_emulation::RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  if (event->stream != nullptr) cuda_emulation::RunUntil(event->stream, event->ticket, 0);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode /*mode*/) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  cuda_emulation::Device& d = Dev();
  if (d.capturing != nullptr) return cudaErrorIllegalState;
  d.capturing = cuda_emulation::Resolve(stream);
  d.captured.clear();
  d.capture_invalidated = false;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  cuda_emulation::Device& d = Dev();
  if (d.capturing != cuda_emulation::Resolve(stream)) return cudaErrorIllegalState;
  d.capturing = nullptr;
  *graph = nullptr;
  if (d.capture_invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = new cuda_emulation::Graph{std::move(d.captured)};
  d.captured.clear();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long /*flags*/) {
  if (graph == nullptr) return cudaErrorInvalidValue;
  *exec = new cuda_emulation::GraphExec{graph->work};
  return cudaSuccess;
}

// The graph's work as one item on `stream`, run in the order it was recorded.
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(Dev().mu);
  if (exec == nullptr) return cudaErrorInvalidValue;
  if (cuda_emulation::RefusedInCapture()) return cudaErrorStreamCaptureUnsupported;
  cuda_emulation::Enqueue(stream, {[work = exec->work] {
                            for (const auto& run : work) {
                              if (run) run();
                            }
                          }});
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
