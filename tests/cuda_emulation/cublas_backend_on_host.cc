// The CUDA backend's own source, compiled for the host against the stand-in CUDA headers
// (stub/): its kernels and cuBLAS calls run on the emulated device (emulator.h).
#include "core/compute/cuda/cublas_backend.cu"
