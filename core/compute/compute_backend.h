// The compute-backend interface: every numeric kernel a model needs, so that a model runs
// unchanged on the CPU (OpenBLAS) or a GPU (cuBLAS). All matrices are row-major float32.
#ifndef MONSOON_CORE_COMPUTE_COMPUTE_BACKEND_H_
#define MONSOON_CORE_COMPUTE_COMPUTE_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "core/compute/activation.h"

namespace monsoon {

// Owns `size` floats in a backend's memory space (host memory for the CPU backend, device
// memory for a GPU backend). Move-only; frees through the deleter the backend supplied.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(float* data, size_t size, std::function<void(float*)> deleter)
      : data_(data, std::move(deleter)), size_(size) {}

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<float, std::function<void(float*)>> data_;
  size_t size_ = 0;
};

// Host memory a backend's copies reach without staging (page-locked on a GPU, so that its copy
// engine reads and writes it directly), until the pin is destroyed, which must happen before
// the memory is freed. Move-only. An empty pin (the CPU backend's, or memory that could not be
// locked) changes nothing: copies of that memory stage as before.
class HostPin {
 public:
  HostPin() = default;
  explicit HostPin(std::function<void()> unpin) : unpin_(std::move(unpin)) {}
  HostPin(HostPin&& other) noexcept : unpin_(std::exchange(other.unpin_, nullptr)) {}
  HostPin& operator=(HostPin&& other) noexcept {
    Unpin();
    unpin_ = std::exchange(other.unpin_, nullptr);
    return *this;
  }
  HostPin(const HostPin&) = delete;
  HostPin& operator=(const HostPin&) = delete;
  ~HostPin() { Unpin(); }

  bool pinned() const { return unpin_ != nullptr; }

 private:
  void Unpin() {
    if (unpin_ != nullptr) std::exchange(unpin_, nullptr)();
  }
  std::function<void()> unpin_;
};

// The most rows GatherRows' float index can name exactly.
inline constexpr size_t kMaxGatherRows = size_t{1} << 24;

// Loss value and (for classification) the number of correct argmax predictions.
struct LossResult {
  double loss_sum = 0;  // summed over the batch (divide by rows for the mean)
  int correct = 0;

  // The kLossFloats floats a loss method wrote (WriteLoss in kernel_math.h), on the host.
  static LossResult Read(const float* host) {
    return {static_cast<double>(host[0]) + host[1], static_cast<int>(host[2])};
  }
};

// Where a batch of [C, H, W] activations lies in memory: [batch x C x H x W] (kPlain), or the
// backend's native layout (kNative; see ComputeBackend::NativeChannelBlock).
enum class Layout { kPlain, kNative };

// A ReLU run inside another kernel's call, planned once per model (core/model/model.cc).
enum class FusedRelu {
  kNone,
  // A convolution's or a batch normalisation's: y = max(0, conv(x, w) + b). Conv2dBackward's
  // dy is still the gradient with respect to conv(x, w) + b, before the ReLU.
  kOnOutput,
  // A pooling layer's: x is such a fused ReLU's output, and Pool2dBackward's dx the gradient
  // with respect to that ReLU's input (zero where x is 0).
  kOnInput,
};

// Where a 2-D convolution reads and writes: per example, `channels` x `height` x `width` in,
// `filters` x `out_height` x `out_width` out (row-major, channels first). The input is padded
// with zeros: `pad_top` rows above, `pad_left` columns to the left (and as many below and to
// the right as the output needs).
struct Conv2dGeometry {
  int channels = 0, height = 0, width = 0;
  int filters = 0, kernel = 0, stride = 1;
  int pad_top = 0, pad_left = 0;
  int out_height = 0, out_width = 0;
  // The layouts of x (and dx) and of y (and dy).
  Layout in = Layout::kPlain, out = Layout::kPlain;
  // kNone or kOnOutput; backends with a native layout take kOnOutput where `out` is native.
  FusedRelu relu = FusedRelu::kNone;
  // Weights per filter: channels * kernel * kernel, in (channel, row, column) order.
  int patch() const { return channels * kernel * kernel; }
};

// A 2-D pooling window: `size` x `size`, moved by `stride`, over each channel, unpadded.
struct Pool2dGeometry {
  int channels = 0, height = 0, width = 0;
  int size = 2, stride = 2;
  int out_height = 0, out_width = 0;
  Layout layout = Layout::kPlain;  // of x, y, dy and dx
  // kNone or kOnInput; backends with a native layout take kOnInput where `layout` is native.
  FusedRelu relu = FusedRelu::kNone;
};
enum class PoolKind { kMax, kAverage };

// Batch normalisation over [batch x channels x pixels] activations (pixels = 1 after a dense
// layer): each channel is normalised by a mean and variance, then scaled by gamma and shifted
// by beta. Training uses the batch's statistics (over batch x pixels values, the variance
// biased) and moves the running ones: running = (1 - momentum) running + momentum batch, with
// the variance unbiased (as PyTorch's BatchNorm). Evaluating uses the running statistics.
struct BatchNormGeometry {
  int channels = 0, pixels = 1;
  float momentum = 0.1f, epsilon = 1e-5f;
  Layout layout = Layout::kPlain;  // of x, y, dy and dx
  // kNone or kOnOutput (y = max(0, batchnorm(x)); BatchNormBackward's dy is still the
  // gradient before the ReLU); backends with a native layout take kOnOutput where `layout` is
  // native.
  FusedRelu relu = FusedRelu::kNone;
};

// A dense layer over a batch: y [batch x out] = x [batch x in] W [in x out] + b [out], then
// y = max(0, y) where `relu` is kOnOutput (every backend takes it).
struct DenseGeometry {
  int in = 0, out = 0;
  FusedRelu relu = FusedRelu::kNone;  // kNone or kOnOutput
};

// Pointers passed to these methods live in the backend's memory space unless named `host`.
// A backend is used by one thread at a time. A device backend may queue work asynchronously
// and records its first error instead of throwing or aborting: after an error every method is
// a no-op, and Synchronize() returns it.
class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;

  // "cpu", or e.g. "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string name() const = 0;

  // Waits for all queued work; returns the backend's first error, if any.
  virtual absl::Status Synchronize() { return absl::OkStatus(); }

  // Whether Allocate's memory is apart from the host's (a GPU's): data a model reads every
  // step is then worth keeping there.
  virtual bool separate_memory() const { return false; }
  // Zero-initialised buffer of n floats.
  virtual DeviceBuffer Allocate(size_t n) = 0;
  // Makes [host, host + n) memory the copies below reach directly (see HostPin); an empty pin
  // where the backend has no use for it or the memory cannot be locked.
  virtual HostPin PinHostMemory(float* /*host*/, size_t /*n*/) { return HostPin(); }
  // `host` may be written again as soon as these return.
  virtual void CopyToDevice(const float* host, float* device, size_t n) = 0;
  virtual void CopyToHost(const float* device, float* host, size_t n) = 0;
  // CopyToHost, returning the index of the first NaN or infinity copied (n when none), found by
  // the pass that writes `host` (FirstNonFinite in core/finite.h) or, where the copy engine
  // wrote pinned `host` itself, by one pass over it.
  virtual size_t CopyToHostFindingNonFinite(const float* device, float* host, size_t n) = 0;
  // Starts copying [device, device + n) to [host, host + n) as soon as the work queued so far
  // has written it, while later work runs (a GPU's copy stream). A later CopyToHost* of a
  // range that such started copies tile exactly, with the same host addresses, then only waits
  // for them (and unpacks them, where `host` is not pinned). Until then `host` must not be
  // read or written. Nothing to start where backend memory is host memory.
  virtual void StartCopyToHost(const float* /*device*/, float* /*host*/, size_t /*n*/) {}
  // Starts copying [host, host + n) to [device, device + n) once the work queued so far is
  // done, while later work runs (a GPU's copy stream): work queued after it may not touch
  // [device, device + n) until AwaitStartedUploads, and `host` must not be written until work
  // queued after that has been waited for. Where backend memory is host memory, a copy now.
  virtual void StartCopyToDevice(const float* host, float* device, size_t n) {
    CopyToDevice(host, device, n);
  }
  // Work queued from now on runs after every upload StartCopyToDevice has started.
  virtual void AwaitStartedUploads() {}
  // to = from, n values of backend memory, queued like any other work.
  virtual void CopyOnDevice(const float* from, float* to, size_t n) = 0;

  // C[m x n] = alpha * op(A) * op(B) + beta * C, with op(A) of shape m x k and op(B) k x n.
  virtual void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    const float* b, float beta, float* c) = 0;
  // Graphs: the calls made between BeginGraph and EndGraph are recorded, not run, and RunGraph
  // queues them again, with the same arguments, as one launch (a CUDA Graph): for a model whose
  // step makes the same calls on the same buffers every time. The calls recorded may not copy
  // to or from the host. A backend without graphs (the CPU's) returns false from BeginGraph
  // and runs every call as it comes.
  virtual bool BeginGraph() { return false; }
  // The recorded graph's number, or -1 when recording failed: then nothing recorded has run
  // (the caller makes the calls again) and the backend records no error of it.
  virtual int EndGraph() { return -1; }
  // Queues graph `graph`; false (nothing queued) when the backend has dropped it, as it does
  // when a buffer of its own that a graph may use has grown.
  virtual bool RunGraph(int /*graph*/) { return false; }
  // Frees graph `graph`, for a caller whose buffers it used have changed.
  virtual void DropGraph(int /*graph*/) {}
  // Row r of out [rows x cols] = row index[r] of table [? x cols], where index holds row
  // numbers as floats (below kMaxGatherRows).
  virtual void GatherRows(const float* table, int cols, const float* index, int rows,
                          float* out) = 0;
  // A dense layer's forward (DenseGeometry). By default a Gemm, AddBias, then the ReLU in
  // place; a backend may run them as one call.
  virtual void DenseForward(const DenseGeometry& g, const float* x, const float* w, const float* b,
                            int batch, float* y) {
    Gemm(false, false, batch, g.out, g.in, 1.0f, x, w, 0.0f, y);
    AddBias(b, batch, g.out, y);
    if (g.relu == FusedRelu::kOnOutput) {
      ActivationForward({Activation::kRelu}, y, y, static_cast<size_t>(batch) * g.out);
    }
  }
  // Its weights' gradients, from dy with respect to x W + b (before a fused ReLU): dw = x^T dy
  // and db, the column sums of dy. By default a Gemm and ColumnSum; a backend may sum db
  // inside the Gemm.
  virtual void DenseWeightGradient(const DenseGeometry& g, const float* x, const float* dy,
                                   int batch, float* dw, float* db) {
    Gemm(true, false, g.in, g.out, batch, 1.0f, x, dy, 0.0f, dw);
    ColumnSum(dy, batch, g.out, db);
  }
  // x[r][c] += bias[c] for a rows x cols matrix x.
  virtual void AddBias(const float* bias, int rows, int cols, float* x) = 0;
  // out[c] = sum_r x[r][c].
  virtual void ColumnSum(const float* x, int rows, int cols, float* out) = 0;
  // y = f(x), elementwise over n values, per ActivationElement (x == y allowed).
  virtual void ActivationForward(ActivationFn f, const float* x, float* y, size_t n) = 0;
  // dx = dy * f'(x), per ActivationGradient, from the input x and the output y = f(x); x may be
  // null where !GradientUsesInput(f.kind) (dx == dy allowed).
  virtual void ActivationBackward(ActivationFn f, const float* x, const float* y, const float* dy,
                                  float* dx, size_t n) = 0;
  // The losses write the batch's summed loss and correct count into `loss` (kLossFloats
  // floats of backend memory, read by LossResult::Read after a CopyToHost), queued like any
  // other work: nothing waits for them.
  //
  // Softmax cross-entropy of logits [rows x classes] against integer labels stored as floats.
  // Writes dlogits = (softmax - onehot) / rows, the gradient of the batch-mean loss.
  virtual void SoftmaxCrossEntropy(const float* logits, const float* labels, int rows, int classes,
                                   float* dlogits, float* loss) = 0;
  // The loss named mean_squared_error: 0.5 * ||pred - target||^2 per row (half the usual MSE),
  // summed over rows (correct: 0); dpred = (pred - target) / rows.
  virtual void MeanSquaredError(const float* pred, const float* target, int rows, int cols,
                                float* dpred, float* loss) = 0;
  // y += alpha * x.
  virtual void Axpy(float alpha, const float* x, float* y, size_t n) = 0;
  // y = a + b, elementwise over n values (y may be a or b).
  virtual void Add(const float* a, const float* b, float* y, size_t n) = 0;
  // A Nesterov momentum step over n parameters w (look-ahead form) with velocity v and
  // gradient g, per NesterovElement in core/compute/kernel_math.h.
  virtual void NesterovStep(float learning_rate, float momentum, const float* g, float* v, float* w,
                            size_t n) = 0;

  // Convolutional models: convolution and pooling over [batch x C x H x W] activations,
  // or over the backend's native layout where the geometry says so, and dropout.
  //
  // The native layout, where a backend has one, is the one its convolutions run in:
  // [batch x C/B x H x W x B] for a channel block B (oneDNN's nChw16c or nChw8c on the CPU).
  // Activations of C channels may take it when B divides C (they then hold as many floats as
  // in [batch x C x H x W]); elementwise methods take either layout. 0: no native layout.
  virtual int NativeChannelBlock() const { return 0; }
  // y = x from [batch x C x H x W] into the native layout (to_native) or back.
  virtual void ConvertLayout(int channels, int height, int width, int batch, bool to_native,
                             const float* x, float* y) {}
  // y = conv(x, w) + b, with w [filters x patch] and b [filters].
  virtual void Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* b, int batch, float* y) = 0;
  // Overwrites dw and db with the batch's gradients; writes dx when not null.
  virtual void Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w,
                              const float* dy, int batch, float* dw, float* db, float* dx) = 0;
  // Bytes of workspace that Pool2dForward fills for the Pool2dBackward of the same batch (0:
  // none; `workspace` may then be null).
  virtual size_t PoolWorkspaceBytes(const Pool2dGeometry& /*g*/, PoolKind /*kind*/,
                                    int /*batch*/) const {
    return 0;
  }
  virtual void Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch,
                             float* y, uint8_t* workspace) = 0;
  // dx from dy: a max window's gradient goes to its first largest input, an average window's
  // is shared equally (overlapping windows add up). x, y and workspace are the forward pass's.
  // dx is 16-byte aligned.
  virtual void Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x,
                              const float* y, const uint8_t* workspace, const float* dy, int batch,
                              float* dx) = 0;
  // Inverted dropout over n values: each is kept with probability 1 - rate, and then scaled by
  // 1 / (1 - rate), deciding by a hash of (seed, its index) alone; mask gets each value's
  // factor (0 or 1 / (1 - rate)) and y = x * mask.
  virtual void DropoutForward(float rate, uint64_t seed, const float* x, float* mask, float* y,
                              size_t n) = 0;
  // dx = dy * mask.
  virtual void DropoutBackward(const float* mask, const float* dy, float* dx, size_t n) = 0;

  // y = gamma (x - mean) invstd + beta per channel, with invstd = 1 / sqrt(var + epsilon);
  // writes the mean and invstd used ([channels] each) for BatchNormBackward. Training also
  // moves running_mean and running_var (see BatchNormGeometry). x == y allowed.
  virtual void BatchNormForward(const BatchNormGeometry& g, bool training, const float* x,
                                const float* gamma, const float* beta, float* running_mean,
                                float* running_var, int batch, float* y, float* mean,
                                float* invstd) = 0;
  // Overwrites dgamma and dbeta with the batch's gradients and writes dx when not null, given
  // the forward pass's x, mean and invstd; `training` as in that pass (then the batch's
  // statistics depend on x).
  virtual void BatchNormBackward(const BatchNormGeometry& g, bool training, const float* x,
                                 const float* gamma, const float* mean, const float* invstd,
                                 const float* dy, int batch, float* dgamma, float* dbeta,
                                 float* dx) = 0;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_COMPUTE_BACKEND_H_
