// Dense layers through cuBLASLt for the CUDA backend: the product with its bias and the ReLU
// after it in one call, and the weights' gradient with the bias's (the column sums of dy) in
// one, by the matmul's epilogues. Where cuBLASLt has no algorithm for a shape and epilogue, a
// call says so and the backend runs its separate kernels. Included by CUDA sources only (its
// types are CUDA's and cuBLASLt's).
#ifndef MONSOON_CORE_COMPUTE_CUDA_LT_DENSE_H_
#define MONSOON_CORE_COMPUTE_CUDA_LT_DENSE_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/statusor.h"
#include "core/compute/compute_backend.h"

namespace monsoon {

class LtDense {
 public:
  // Calls on `stream`, computing in `compute` (fp32, or tensor cores on tf32 or bf16 operands).
  static absl::StatusOr<std::unique_ptr<LtDense>> Create(cudaStream_t stream,
                                                         cublasComputeType_t compute);
  ~LtDense();
  LtDense(const LtDense&) = delete;
  LtDense& operator=(const LtDense&) = delete;

  // "cuBLASLt", then how many of the products planned so far it runs: "cuBLASLt (6 of 6
  // products so far)".
  std::string Report() const;

  // ComputeBackend::DenseForward. false (nothing queued) when cuBLASLt has no algorithm for it
  // or the batch is empty; an error with cuBLASLt's status otherwise.
  absl::StatusOr<bool> Forward(const DenseGeometry& g, const float* x, const float* w,
                               const float* b, int batch, float* y);
  // ComputeBackend::DenseWeightGradient. false as for Forward.
  absl::StatusOr<bool> WeightGradient(const DenseGeometry& g, const float* x, const float* dy,
                                      int batch, float* dw, float* db);

 private:
  // A product D [m x n] = op(A) [m x k] op(B) [k x n] (column-major) with an epilogue: its
  // descriptors and the algorithm cuBLASLt picked for them.
  struct Plan;
  // Epilogue, m, n, k, B transposed, and the alignments (bytes) of A, B and D.
  using PlanKey = std::tuple<int, int, int, int, bool, uint32_t, uint32_t, uint32_t>;

  LtDense(cublasLtHandle_t handle, cudaStream_t stream, cublasComputeType_t compute);
  // Runs the product on A, B and D (C is D, beta 0) with `bias` as the epilogue's vector;
  // false (nothing queued) when cuBLASLt has no algorithm for it at these pointers'
  // alignments, or `bias` is not 16-byte aligned (cuBLASLt's kernels may assume it is).
  absl::StatusOr<bool> Run(cublasLtEpilogue_t epilogue, int m, int n, int k, bool trans_b,
                           const float* a, const float* b, float* d, const float* bias);
  // The plan for `key`, made on first use; null when cuBLASLt has no algorithm for it.
  absl::StatusOr<const Plan*> PlanFor(const PlanKey& key);
  // Sets plan->algo to cuBLASLt's pick for operands of these alignments; false: none.
  bool FindAlgorithm(uint32_t align_a, uint32_t align_b, uint32_t align_d, Plan* plan);

  const cublasLtHandle_t handle_;
  const cudaStream_t stream_;
  const cublasComputeType_t compute_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;  // null: no algorithm
};

}  // namespace monsoon

#endif  // MONSOON_CORE_COMPUTE_CUDA_LT_DENSE_H_
