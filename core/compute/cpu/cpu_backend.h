// ComputeBackend on the host: OpenBLAS cblas_sgemm for matrix products, oneDNN for
// convolutions and for batch normalisation in the native layout, plain loops for the rest.
#ifndef MONSOON_CORE_COMPUTE_CPU_CPU_BACKEND_H_
#define MONSOON_CORE_COMPUTE_CPU_CPU_BACKEND_H_

#include <vector>

#include "core/compute/compute_backend.h"
#include "core/compute/cpu/onednn_batchnorm.h"
#include "core/compute/cpu/onednn_convolution.h"

namespace monsoon {

class CpuBackend : public ComputeBackend {
 public:
  // `blas_threads` sets OpenBLAS's thread count (process-wide in OpenBLAS) and oneDNN's.
  // `native_layouts`: whether convolution and pooling activations may stay in oneDNN's blocked
  // layout between layers (off: every activation is [batch x C x H x W]; for tests).
  explicit CpuBackend(int blas_threads = 1, bool native_layouts = true);

  std::string name() const override { return "cpu"; }
  DeviceBuffer Allocate(size_t n) override;
  void CopyToDevice(const float* host, float* device, size_t n) override;
  void CopyToHost(const float* device, float* host, size_t n) override;
  size_t CopyToHostFindingNonFinite(const float* device, float* host, size_t n) override;
  void CopyOnDevice(const float* from, float* to, size_t n) override;
  void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
            const float* b, float beta, float* c) override;
  void GatherRows(const float* table, int cols, const float* index, int rows, float* out) override;
  void AddBias(const float* bias, int rows, int cols, float* x) override;
  void ColumnSum(const float* x, int rows, int cols, float* out) override;
  void ActivationForward(ActivationFn f, const float* x, float* y, size_t n) override;
  void ActivationBackward(ActivationFn f, const float* x, const float* y, const float* dy,
                          float* dx, size_t n) override;
  void SoftmaxCrossEntropy(const float* logits, const float* labels, int rows, int classes,
                           float* dlogits, float* loss) override;
  void MeanSquaredError(const float* pred, const float* target, int rows, int cols, float* dpred,
                        float* loss) override;
  void Axpy(float alpha, const float* x, float* y, size_t n) override;
  void Add(const float* a, const float* b, float* y, size_t n) override;
  void NesterovStep(float learning_rate, float momentum, const float* g, float* v, float* w,
                    size_t n) override;

  int NativeChannelBlock() const override;
  void ConvertLayout(int channels, int height, int width, int batch, bool to_native, const float* x,
                     float* y) override;
  void Conv2dForward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                     int batch, float* y) override;
  void Conv2dBackward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                      int batch, float* dw, float* db, float* dx) override;
  // Workspace for the native layout's 2x2 max pooling with stride 2 where the windows tile the
  // input: which input won each window, a byte per output.
  size_t PoolWorkspaceBytes(const Pool2dGeometry& g, PoolKind kind, int batch) const override;
  void Pool2dForward(const Pool2dGeometry& g, PoolKind kind, const float* x, int batch, float* y,
                     uint8_t* workspace) override;
  void Pool2dBackward(const Pool2dGeometry& g, PoolKind kind, const float* x, const float* y,
                      const uint8_t* workspace, const float* dy, int batch, float* dx) override;
  void DropoutForward(float rate, uint64_t seed, const float* x, float* mask, float* y,
                      size_t n) override;
  void DropoutBackward(const float* mask, const float* dy, float* dx, size_t n) override;
  void BatchNormForward(const BatchNormGeometry& g, bool training, const float* x,
                        const float* gamma, const float* beta, float* running_mean,
                        float* running_var, int batch, float* y, float* mean,
                        float* invstd) override;
  void BatchNormBackward(const BatchNormGeometry& g, bool training, const float* x,
                         const float* gamma, const float* mean, const float* invstd,
                         const float* dy, int batch, float* dgamma, float* dbeta,
                         float* dx) override;

 private:
  OneDnnConvolution convolution_;
  OneDnnBatchNorm batch_norm_;
  const bool native_layouts_;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CPU_CPU_BACKEND_H_
