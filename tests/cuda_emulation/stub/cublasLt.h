// Stand-in for cuBLASLt's header, for compiling the CUDA backend for the host
// (tests/cuda_emulation): the matmul calls the backend makes, with the epilogues it uses,
// following cuBLASLt's column-major definitions, queued on the call's emulated stream
// (cublaslt_emulator.cc).
#ifndef MONSOON_TESTS_CUDA_EMULATION_STUB_CUBLASLT_H_
#define MONSOON_TESTS_CUDA_EMULATION_STUB_CUBLASLT_H_

#include <cstddef>
#include <cstdint>

#include "cublas_v2.h"

namespace cuda_emulation {
struct LtHandle;
struct LtMatmulDesc;
struct LtLayout;
struct LtPreference;
}  // namespace cuda_emulation
using cublasLtHandle_t = cuda_emulation::LtHandle*;
using cublasLtMatmulDesc_t = cuda_emulation::LtMatmulDesc*;
using cublasLtMatrixLayout_t = cuda_emulation::LtLayout*;
using cublasLtMatmulPreference_t = cuda_emulation::LtPreference*;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
};
enum cublasLtEpilogue_t {
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_RELU_BIAS = 6,
  CUBLASLT_EPILOGUE_BGRADA = 256,
  CUBLASLT_EPILOGUE_BGRADB = 512,
};
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
// TRANSA and TRANSB take an int32_t (cublasOperation_t), EPILOGUE a uint32_t, BIAS_POINTER a
// pointer; a size that does not match is CUBLAS_STATUS_INVALID_VALUE, as in cuBLASLt.
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              const void* value, size_t bytes);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type,
                                          uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    const void* value, size_t bytes);
// One algorithm for an fp32 product whose layouts fit its operations, with one of the
// epilogues above, for operands aligned as the preference says (256 bytes unless set); none
// (CUBLAS_STATUS_NOT_SUPPORTED) when MONSOON_CUDA_EMULATION_LT=none, as for a shape a real
// cuBLASLt has no kernel for.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned);
// D = alpha op(A) op(B) + beta C, then the epilogue: BIAS adds bias[i] to row i of D, RELU
// clamps D at 0 (after the bias), BGRADA writes the sums over k of op(A)'s rows into the bias
// pointer, BGRADB those of op(B)'s columns. Host alpha and beta. An operand less aligned than
// the algorithm's preference, or a bias vector not 16-byte aligned, is a violation: cuBLASLt's
// kernels may assume them and fault.
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                              cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                              cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream);

#endif  // MONSOON_TESTS_CUDA_EMULATION_STUB_CUBLASLT_H_
