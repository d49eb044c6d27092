#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/compute/cuda/lt_dense.h"
#include "core/status_macros.h"

namespace monsoon {
namespace {

absl::Status LtStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cublasGetStatusString(status)));
}

// The largest power of two up to 256 that divides the address: what cuBLASLt's alignment
// preferences take.
uint32_t Alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

}  // namespace

struct LtDense::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};

  ~Plan() {
    for (cublasLtMatrixLayout_t layout : {a, b, d}) {
      if (layout != nullptr) cublasLtMatrixLayoutDestroy(layout);
    }
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

absl::StatusOr<std::unique_ptr<LtDense>> LtDense::Create(cudaStream_t stream,
                                                         cublasComputeType_t compute) {
  cublasLtHandle_t handle = nullptr;
  MONSOON_RETURN_IF_ERROR(LtStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  return std::unique_ptr<LtDense>(new LtDense(handle, stream, compute));
}

LtDense::LtDense(cublasLtHandle_t handle, cudaStream_t stream, cublasComputeType_t compute)
    : handle_(handle), stream_(stream), compute_(compute) {}

LtDense::~LtDense() {
  plans_.clear();
  cublasLtDestroy(handle_);
}

std::string LtDense::Report() const {
  if (plans_.empty()) return "cuBLASLt";
  size_t on_lt = 0;
  for (const auto& [key, plan] : plans_) on_lt += plan != nullptr ? 1 : 0;
  return absl::StrCat("cuBLASLt (", on_lt, " of ", plans_.size(), " products so far)");
}

// Row-major y [batch x out] = x W + b is column-major D [out x batch] = W^T-as-stored
// [out x in] times x-as-stored [in x batch], the bias added to each of D's columns.
absl::StatusOr<bool> LtDense::Forward(const DenseGeometry& g, const float* x, const float* w,
                                      const float* b, int batch, float* y) {
  const cublasLtEpilogue_t epilogue =
      g.relu == FusedRelu::kOnOutput ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return Run(epilogue, g.out, batch, g.in, false, w, x, y, b);
}

// Row-major dw [in x out] = x^T dy is column-major D [out x in] = dy-as-stored [out x batch]
// times (x-as-stored [in x batch])^T; BGRADA sums A = dy over k = batch: db.
absl::StatusOr<bool> LtDense::WeightGradient(const DenseGeometry& g, const float* x,
                                             const float* dy, int batch, float* dw, float* db) {
  return Run(CUBLASLT_EPILOGUE_BGRADA, g.out, g.in, batch, true, dy, x, dw, db);
}

absl::StatusOr<bool> LtDense::Run(cublasLtEpilogue_t epilogue, int m, int n, int k, bool trans_b,
                                  const float* a, const float* b, float* d, const float* bias) {
  if (m == 0 || n == 0 || k == 0 || Alignment(bias) < 16) return false;
  MONSOON_ASSIGN_OR_RETURN(const Plan* plan, PlanFor({epilogue, m, n, k, trans_b, Alignment(a),
                                                      Alignment(b), Alignment(d)}));
  if (plan == nullptr) return false;
  MONSOON_RETURN_IF_ERROR(
      LtStatus(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof bias),
               "cublasLtMatmulDescSetAttribute (BIAS_POINTER)"));
  const float one = 1.0f, zero = 0.0f;
  MONSOON_RETURN_IF_ERROR(
      LtStatus(cublasLtMatmul(handle_, plan->desc, &one, a, plan->a, b, plan->b, &zero, d, plan->d,
                              d, plan->d, &plan->algo, nullptr, 0, stream_),
               "cublasLtMatmul"));
  return true;
}

absl::StatusOr<const LtDense::Plan*> LtDense::PlanFor(const PlanKey& key) {
  if (auto known = plans_.find(key); known != plans_.end()) return known->second.get();
  const auto [epilogue, m, n, k, trans_b, align_a, align_b, align_d] = key;
  auto plan = std::make_unique<Plan>();
  const int32_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint32_t epilogue_value = epilogue;
  MONSOON_RETURN_IF_ERROR(LtStatus(cublasLtMatmulDescCreate(&plan->desc, compute_, CUDA_R_32F),
                                   "cublasLtMatmulDescCreate"));
  MONSOON_RETURN_IF_ERROR(LtStatus(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
      "cublasLtMatmulDescSetAttribute (TRANSB)"));
  MONSOON_RETURN_IF_ERROR(
      LtStatus(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                              &epilogue_value, sizeof epilogue_value),
               "cublasLtMatmulDescSetAttribute (EPILOGUE)"));
  MONSOON_RETURN_IF_ERROR(
      LtStatus(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_32F, m, k, m), "A's layout"));
  MONSOON_RETURN_IF_ERROR(LtStatus(trans_b
                                       ? cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_32F, n, k, n)
                                       : cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_32F, k, n, k),
                                   "B's layout"));
  MONSOON_RETURN_IF_ERROR(
      LtStatus(cublasLtMatrixLayoutCreate(&plan->d, CUDA_R_32F, m, n, m), "D's layout"));
  if (!FindAlgorithm(align_a, align_b, align_d, plan.get())) plan.reset();
  return (plans_[key] = std::move(plan)).get();
}

// No workspace: algorithms that need none, so no split-k reduction kernels either. cuBLASLt
// answers a product it has no kernel for with an error status or no result.
bool LtDense::FindAlgorithm(uint32_t align_a, uint32_t align_b, uint32_t align_d, Plan* plan) {
  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasLtMatmulPreferenceCreate(&preference) != CUBLAS_STATUS_SUCCESS) return false;
  const uint64_t workspace = 0;
  bool set =
      cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace, sizeof workspace) == CUBLAS_STATUS_SUCCESS;
  for (const auto& [attribute, bytes] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}}) {
    set = set && cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes,
                                                      sizeof bytes) == CUBLAS_STATUS_SUCCESS;
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const bool picked =
      set &&
      cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                     preference, 1, &result, &found) == CUBLAS_STATUS_SUCCESS &&
      found > 0;
  cublasLtMatmulPreferenceDestroy(preference);
  if (picked) plan->algo = result.algo;
  return picked;
}

}  // namespace monsoon
