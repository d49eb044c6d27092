// The CUDA backend's cuBLASLt dense layers, compiled for the host against the stand-in CUDA and
// cuBLASLt headers (stub/): their matmuls run on the emulated cuBLASLt (cublaslt_emulator.cc).
#include "core/compute/cuda/lt_dense.cu"
