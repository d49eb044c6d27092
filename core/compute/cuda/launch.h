// The one way the CUDA backend launches a kernel: `<<<blocks, threads, 0, stream>>>` under
// nvcc; compiled for the host (tests/cuda_emulation), a call that queues every (block, thread)
// of the grid on the emulated stream.
#ifndef MONSOON_CORE_COMPUTE_CUDA_LAUNCH_H_
#define MONSOON_CORE_COMPUTE_CUDA_LAUNCH_H_

#ifdef __CUDACC__
#define MONSOON_LAUNCH(kernel, blocks, threads, stream, ...) \
  kernel<<<(blocks), (threads), 0, (stream)>>>(__VA_ARGS__)
#else
#define MONSOON_LAUNCH(kernel, blocks, threads, stream, ...) \
  ::cuda_emulation::Launch((blocks), (threads), (stream), kernel, __VA_ARGS__)
#endif

#endif  // MONSOON_CORE_COMPUTE_CUDA_LAUNCH_H_
