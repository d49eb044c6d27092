// 2-D convolutions on the CPU with oneDNN (Debian's libdnnl): the CPU backend's convolution
// kernels. Tensors come and go in Monsoon's layouts (activations [batch x C x H x W], weights
// [filters x C x kernel x kernel]), or activations in the native blocked layout where the
// geometry says so (its Layout in and out: nChw16c on CPUs with AVX-512, else nChw8c), with
// the geometry's ReLU fused into the forward convolution;
// inside, oneDNN runs its JIT kernels on blocked layouts, reordering Monsoon's layouts to and
// from them. Primitives are built once per (geometry, batch).
#ifndef MONSOON_CORE_COMPUTE_CPU_ONEDNN_CONVOLUTION_H_
#define MONSOON_CORE_COMPUTE_CPU_ONEDNN_CONVOLUTION_H_

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/compute/compute_backend.h"

namespace monsoon {
namespace onednn {
struct Engine;  // onednn_common.h
}  // namespace onednn

class OneDnnConvolution {
 public:
  // `threads`: oneDNN's (OpenMP) threads for this object's calls.
  explicit OneDnnConvolution(int threads);
  // The channel block of the native layout (16 or 8), for this CPU.
  static int NativeChannelBlock();
  ~OneDnnConvolution();
  OneDnnConvolution(const OneDnnConvolution&) = delete;
  OneDnnConvolution& operator=(const OneDnnConvolution&) = delete;

  // y = conv(x, w) + b.
  void Forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b, int batch,
               float* y);
  // dw = dL/dw and db = dL/db (overwritten), and dx = dL/dx unless dx is null.
  void Backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy, int batch,
                float* dw, float* db, float* dx);
  // The primitives of Forward and Backward alone (backward-data with `input_gradient`) on
  // buffers of their preferred layouts (the native one for activations the geometry marks
  // native), with no reorders: what those two calls cannot beat, for benchmarks.
  void RunPrimitives(const Conv2dGeometry& g, int batch, bool input_gradient);

 private:
  struct Primitives;  // oneDNN's objects for one (geometry, batch)
  Primitives& For(const Conv2dGeometry& g, int batch);

  const std::unique_ptr<onednn::Engine> engine_;
  const int threads_;
  using Key =
      std::tuple<int, int, int, int, int, int, int, int, int, int, int, Layout, Layout, FusedRelu>;
  std::map<Key, std::unique_ptr<Primitives>> cache_;
  std::vector<float> bias_scratch_;  // RunPrimitives' bias and bias gradient
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CPU_ONEDNN_CONVOLUTION_H_
