// Per-row loss math and per-element optimizer math shared by the CPU backend and the CUDA
// kernels (compiled for both host and device under nvcc), so the two backends cannot drift
// apart.
#ifndef MONSOON_CORE_COMPUTE_KERNEL_MATH_H_
#define MONSOON_CORE_COMPUTE_KERNEL_MATH_H_

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define MONSOON_HOST_DEVICE __host__ __device__
#else
#define MONSOON_HOST_DEVICE
#endif

namespace monsoon {

// SplitMix64 of (seed, i): a counter-based generator, so that any element's random number
// depends on nothing else (initial weights, dropout masks).
MONSOON_HOST_DEVICE inline uint64_t SplitMix64(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Element i of GatherRows' output: row index[i / cols] of table, column i % cols.
MONSOON_HOST_DEVICE inline float GatherElement(const float* table, int cols, const float* index,
                                               size_t i) {
  const size_t row = static_cast<size_t>(index[i / cols]);
  return table[row * cols + i % cols];
}

// A loss method's result in its kLossFloats floats: the summed loss as a float and the
// remainder of that rounding (together a double's precision), then the correct count.
inline constexpr int kLossFloats = 3;
MONSOON_HOST_DEVICE inline void WriteLoss(double loss_sum, double correct, float* out) {
  out[0] = static_cast<float>(loss_sum);
  out[1] = static_cast<float>(loss_sum - static_cast<double>(out[0]));
  out[2] = static_cast<float>(correct);
}

// Uniform in [0, 1) from SplitMix64(seed, i).
MONSOON_HOST_DEVICE inline double UniformHash(uint64_t seed, uint64_t i) {
  return static_cast<double>(SplitMix64(seed, i) >> 11) * 0x1.0p-53;
}

// Softmax cross-entropy of one row of logits z[classes] against `label`. Writes
// dz = (softmax(z) - onehot(label)) * inv_rows (the gradient of the batch-mean loss), sets
// *correct to whether argmax(z) == label (ties go to the lowest class), returns the row's loss.
MONSOON_HOST_DEVICE inline float SoftmaxCrossEntropyRow(const float* z, int label, int classes,
                                                        float inv_rows, float* dz, bool* correct) {
  int argmax = 0;
  for (int c = 1; c < classes; ++c) {
    if (z[c] > z[argmax]) argmax = c;
  }
  const float zmax = z[argmax];
  float denom = 0.0f;
  for (int c = 0; c < classes; ++c) {
    dz[c] = expf(z[c] - zmax);
    denom += dz[c];
  }
  const float inv_denom = 1.0f / denom;
  for (int c = 0; c < classes; ++c) dz[c] *= inv_denom;
  *correct = argmax == label;
  dz[label] -= 1.0f;
  for (int c = 0; c < classes; ++c) dz[c] *= inv_rows;
  return -((z[label] - zmax) - logf(denom));
}

// One element of a Nesterov momentum step kept in look-ahead form (Sutskever et al. 2013):
// w holds x + mu v, the point gradients are taken at. With g = grad at w:
// v' = mu v - lr g;  w' = w - mu v + (1 + mu) v'  (so that w' = x' + mu v' with x' = x + v').
MONSOON_HOST_DEVICE inline void NesterovElement(float lr, float mu, float g, float* v, float* w) {
  const float v_old = *v;
  const float v_new = mu * v_old - lr * g;
  *v = v_new;
  *w += -mu * v_old + (1.0f + mu) * v_new;
}

// Batch normalisation (ComputeBackend::BatchNormForward): one value normalised, scaled and
// shifted.
MONSOON_HOST_DEVICE inline float BatchNormElement(float x, float mean, float invstd, float gamma,
                                                  float beta) {
  return gamma * ((x - mean) * invstd) + beta;
}

// One channel's running statistics
// moved towards a batch's mean and biased variance over `count` values, the variance made
// unbiased first.
MONSOON_HOST_DEVICE inline void BatchNormRunningUpdate(float momentum, float mean, float variance,
                                                       double count, float* running_mean,
                                                       float* running_var) {
  const float unbiased = count > 1 ? static_cast<float>(variance * count / (count - 1)) : variance;
  *running_mean = (1.0f - momentum) * *running_mean + momentum * mean;
  *running_var = (1.0f - momentum) * *running_var + momentum * unbiased;
}

// The gradient of one batch-normalised value: dy * gamma * invstd when the statistics were
// fixed (evaluating); in training, less the channel's mean dy and the part through the batch's
// statistics (xhat = (x - mean) invstd; the means are over the channel's batch * pixels values).
MONSOON_HOST_DEVICE inline float BatchNormGradientElement(bool training, float gamma, float invstd,
                                                          float xhat, float dy, float mean_dy,
                                                          float mean_dy_xhat) {
  const float centred = training ? dy - mean_dy - xhat * mean_dy_xhat : dy;
  return gamma * invstd * centred;
}

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_KERNEL_MATH_H_
