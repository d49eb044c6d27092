// cuBLASLt's matmul on the emulated device (stub/cublasLt.h), from its column-major
// definitions: a rows x cols layout with leading dimension ld holds X(i, j) at x[i + j * ld].
// Argument checks as cuBLASLt documents them; each operand's extent, and the bias vector's,
// must lie in one live device allocation; products and sums accumulate in double.
#include <cstdlib>
#include <cstring>
#include <string>

#include "cublasLt.h"
#include "emulator.h"

namespace cuda_emulation {

struct LtHandle {};
struct LtMatmulDesc {
  cublasComputeType_t compute;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
};
struct LtLayout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};
struct LtPreference {
  uint32_t alignment[4] = {256, 256, 256, 256};  // A, B, C, D
};

namespace {

bool KnownEpilogue(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU ||
         e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS ||
         e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}

// One product's shape, from its layouts: D is m x n, op(A) m x k, op(B) k x n.
struct Shape {
  int m = 0, n = 0, k = 0;
};

// The product's shape, or false when the layouts do not fit the operations, are not fp32, or
// have a leading dimension shorter than their rows.
bool ShapeOf(const LtMatmulDesc& desc, const LtLayout& a, const LtLayout& b, const LtLayout& c,
             const LtLayout& d, Shape* shape) {
  for (const LtLayout* l : {&a, &b, &c, &d}) {
    if (l->type != CUDA_R_32F || l->ld < static_cast<int64_t>(std::max<uint64_t>(1, l->rows)) ||
        l->rows > 1u << 30 || l->cols > 1u << 30) {
      return false;
    }
  }
  const bool ta = desc.trans_a == CUBLAS_OP_T, tb = desc.trans_b == CUBLAS_OP_T;
  shape->m = static_cast<int>(d.rows);
  shape->n = static_cast<int>(d.cols);
  shape->k = static_cast<int>(ta ? a.rows : a.cols);
  return (ta ? a.cols : a.rows) == d.rows && (tb ? b.rows : b.cols) == d.cols &&
         (tb ? b.cols : b.rows) == static_cast<uint64_t>(shape->k) && c.rows == d.rows &&
         c.cols == d.cols && c.ld == d.ld;
}

// The bias vector's length for the epilogue (0: none).
int BiasLength(uint32_t epilogue, const Shape& s) {
  if (epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
      epilogue == CUBLASLT_EPILOGUE_BGRADA) {
    return s.m;
  }
  return epilogue == CUBLASLT_EPILOGUE_BGRADB ? s.n : 0;
}

}  // namespace
}  // namespace cuda_emulation

using cuda_emulation::ColumnMajorExtent;
using cuda_emulation::TensorCoreOperand;

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = new cuda_emulation::LtHandle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  cuda_emulation::SynchronizeDevice();
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (scale != CUDA_R_32F) return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new cuda_emulation::LtMatmulDesc{compute};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              const void* value, size_t bytes) {
  if (desc == nullptr || value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attribute) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
      int32_t op;
      if (bytes != sizeof op) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&op, value, sizeof op);
      if (op != CUBLAS_OP_N && op != CUBLAS_OP_T) return CUBLAS_STATUS_INVALID_VALUE;
      (attribute == CUBLASLT_MATMUL_DESC_TRANSA ? desc->trans_a : desc->trans_b) =
          static_cast<cublasOperation_t>(op);
      return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      if (bytes != sizeof desc->epilogue) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&desc->epilogue, value, bytes);
      return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      if (bytes != sizeof desc->bias) return CUBLAS_STATUS_INVALID_VALUE;
      std::memcpy(&desc->bias, value, bytes);
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  *layout = new cuda_emulation::LtLayout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference) {
  *preference = new cuda_emulation::LtPreference;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  delete preference;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    const void* value, size_t bytes) {
  if (preference == nullptr || value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (attribute == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
    return bytes == sizeof(uint64_t) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  }
  const int operand = attribute - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES;
  if (operand < 0 || operand > 3 || bytes != sizeof(uint32_t)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&preference->alignment[operand], value, bytes);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  *returned = 0;
  cuda_emulation::Shape shape;
  if (handle == nullptr || preference == nullptr || requested < 1 ||
      !cuda_emulation::ShapeOf(*desc, *a, *b, *c, *d, &shape)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const char* lt = std::getenv("MONSOON_CUDA_EMULATION_LT");
  if (!cuda_emulation::KnownEpilogue(desc->epilogue) ||
      (lt != nullptr && std::string(lt) == "none")) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  results[0] = cublasLtMatmulHeuristicResult_t{};
  for (int operand = 0; operand < 4; ++operand) {
    results[0].algo.data[operand] = preference->alignment[operand];
  }
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void* alpha_v, const void* a_v, cublasLtMatrixLayout_t a_layout,
                              const void* b_v, cublasLtMatrixLayout_t b_layout, const void* beta_v,
                              const void* c_v, cublasLtMatrixLayout_t c_layout, void* d_v,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  cuda_emulation::Shape s;
  if (handle == nullptr || desc == nullptr || algo == nullptr ||
      !cuda_emulation::ShapeOf(*desc, *a_layout, *b_layout, *c_layout, *d_layout, &s) ||
      !cuda_emulation::KnownEpilogue(desc->epilogue) ||
      (workspace_bytes > 0 && workspace == nullptr)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const auto* a = static_cast<const float*>(a_v);
  const auto* b = static_cast<const float*>(b_v);
  const auto* c = static_cast<const float*>(c_v);
  auto* d = static_cast<float*>(d_v);
  auto* bias = static_cast<float*>(const_cast<void*>(desc->bias));
  const int bias_length = cuda_emulation::BiasLength(desc->epilogue, s);
  if (bias_length > 0 && bias == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const void* operands[4] = {a, b, c, d};
  for (int operand = 0; operand < 4; ++operand) {
    if (reinterpret_cast<uintptr_t>(operands[operand]) % algo->data[operand] != 0) {
      cuda_emulation::Violation("cublasLtMatmul: operand " + std::string(1, "ABCD"[operand]) +
                                " is less aligned than its algorithm's preference");
    }
  }
  if (bias_length > 0 && reinterpret_cast<uintptr_t>(bias) % 16 != 0) {
    cuda_emulation::Violation("cublasLtMatmul: the bias vector is not 16-byte aligned");
  }
  const cuda_emulation::LtLayout al = *a_layout, bl = *b_layout, dl = *d_layout;
  cuda_emulation::CheckDeviceFloats(a, ColumnMajorExtent(al.rows, al.cols, al.ld),
                                    "cublasLtMatmul A");
  cuda_emulation::CheckDeviceFloats(b, ColumnMajorExtent(bl.rows, bl.cols, bl.ld),
                                    "cublasLtMatmul B");
  cuda_emulation::CheckDeviceFloats(c, ColumnMajorExtent(s.m, s.n, dl.ld), "cublasLtMatmul C");
  cuda_emulation::CheckDeviceFloats(d, ColumnMajorExtent(s.m, s.n, dl.ld), "cublasLtMatmul D");
  cuda_emulation::CheckDeviceFloats(bias, bias_length, "cublasLtMatmul bias");
  const float alpha = *static_cast<const float*>(alpha_v),
              beta = *static_cast<const float*>(beta_v);
  const bool ta = desc->trans_a == CUBLAS_OP_T, tb = desc->trans_b == CUBLAS_OP_T;
  const uint32_t epilogue = desc->epilogue;
  const int compute = desc->compute;
  const auto op_a = [=](int i, int p) {
    return ta ? a[p + static_cast<size_t>(i) * al.ld] : a[i + static_cast<size_t>(p) * al.ld];
  };
  const auto op_b = [=](int p, int j) {
    return tb ? b[j + static_cast<size_t>(p) * bl.ld] : b[p + static_cast<size_t>(j) * bl.ld];
  };
  cuda_emulation::QueueWork(stream, [=] {
    for (int j = 0; j < s.n; ++j) {
      for (int i = 0; i < s.m; ++i) {
        double sum = 0;
        for (int p = 0; p < s.k; ++p) {
          sum += static_cast<double>(TensorCoreOperand(op_a(i, p), compute)) *
                 TensorCoreOperand(op_b(p, j), compute);
        }
        const size_t at = i + static_cast<size_t>(j) * dl.ld;
        double out = alpha * sum + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c[at]);
        if (epilogue & CUBLASLT_EPILOGUE_BIAS) out += bias[i];
        if ((epilogue & CUBLASLT_EPILOGUE_RELU) && out < 0) out = 0;
        d[at] = static_cast<float>(out);
      }
    }
    const bool rows = epilogue == CUBLASLT_EPILOGUE_BGRADA;
    for (int v = 0; v < bias_length && (rows || epilogue == CUBLASLT_EPILOGUE_BGRADB); ++v) {
      double sum = 0;
      for (int p = 0; p < s.k; ++p) sum += rows ? op_a(v, p) : op_b(p, v);
      bias[v] = static_cast<float>(sum);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}
