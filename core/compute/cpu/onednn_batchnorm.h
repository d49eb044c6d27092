// Batch normalisation on the CPU with oneDNN's primitive (ComputeBackend::BatchNormForward
// and BatchNormBackward): activations in [batch x C x pixels] or in the native blocked layout
// (the geometry's), with the geometry's ReLU fused into the forward pass. Primitives are built
// once per (geometry, batch).
#ifndef MONSOON_CORE_COMPUTE_CPU_ONEDNN_BATCHNORM_H_
#define MONSOON_CORE_COMPUTE_CPU_ONEDNN_BATCHNORM_H_

#include <map>
#include <memory>
#include <tuple>

#include "core/compute/compute_backend.h"

namespace monsoon {
namespace onednn {
struct Engine;  // onednn_common.h
}  // namespace onednn

class OneDnnBatchNorm {
 public:
  // `threads`: oneDNN's (OpenMP) threads for this object's calls.
  explicit OneDnnBatchNorm(int threads);
  ~OneDnnBatchNorm();
  OneDnnBatchNorm(const OneDnnBatchNorm&) = delete;
  OneDnnBatchNorm& operator=(const OneDnnBatchNorm&) = delete;

  // As ComputeBackend's methods of the same names.
  void Forward(const BatchNormGeometry& g, bool training, const float* x, const float* gamma,
               const float* beta, float* running_mean, float* running_var, int batch, float* y,
               float* mean, float* invstd);
  void Backward(const BatchNormGeometry& g, bool training, const float* x, const float* gamma,
                const float* mean, const float* invstd, const float* dy, int batch, float* dgamma,
                float* dbeta, float* dx);
  // The training primitives alone (forward, and backward) on buffers of their own: what the
  // two calls cannot beat, for benchmarks.
  void RunPrimitives(const BatchNormGeometry& g, int batch);

 private:
  struct Primitives;  // oneDNN's objects for one (geometry, batch)
  Primitives& For(const BatchNormGeometry& g, int batch);

  const std::unique_ptr<onednn::Engine> engine_;
  const int threads_;
  using Key = std::tuple<int, int, float, Layout, FusedRelu, int>;
  std::map<Key, std::unique_ptr<Primitives>> cache_;
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CPU_ONEDNN_BATCHNORM_H_
