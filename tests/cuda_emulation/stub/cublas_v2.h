// Stand-in for cuBLAS's header, for compiling the CUDA backend for the host
// (tests/cuda_emulation): the calls the backend makes, following cuBLAS's column-major
// definitions and argument checks, queued on the handle's emulated stream (emulator.cc).
#ifndef MONSOON_TESTS_CUDA_EMULATION_STUB_CUBLAS_V2_H_
#define MONSOON_TESTS_CUDA_EMULATION_STUB_CUBLAS_V2_H_

#include "cuda_runtime.h"

enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_INVALID_VALUE = 7,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
namespace cuda_emulation {
struct Blas;
}  // namespace cuda_emulation
using cublasHandle_t = cuda_emulation::Blas*;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
const char* cublasGetStatusString(cublasStatus_t status);
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc);
cublasStatus_t cublasSgemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                           const float* alpha, const float* a, int lda, const float* x, int incx,
                           const float* beta, float* y, int incy);
cublasStatus_t cublasSaxpy(cublasHandle_t handle, int n, const float* alpha, const float* x,
                           int incx, float* y, int incy);

#endif  // MONSOON_TESTS_CUDA_EMULATION_STUB_CUBLAS_V2_H_
