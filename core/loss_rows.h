// Per-row loss math shared by the CPU backend and the CUDA kernels (compiled for both host and
// device under nvcc), so the two backends cannot drift apart.
#ifndef MONSOON_CORE_LOSS_ROWS_H_
#define MONSOON_CORE_LOSS_ROWS_H_

#include <cmath>

#ifdef __CUDACC__
#define MONSOON_HOST_DEVICE __host__ __device__
#else
#define MONSOON_HOST_DEVICE
#endif

namespace monsoon {

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

}  // namespace monsoon

#endif  // MONSOON_CORE_LOSS_ROWS_H_
