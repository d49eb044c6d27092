// The CUDA backend's cuDNN layer, compiled for the host against the stand-in CUDA and cuDNN
// headers (stub/): its calls reach the emulated cuDNN (cudnn_emulator.cc) through dlsym.
#include "core/compute/cuda/cudnn_layers.cu"
