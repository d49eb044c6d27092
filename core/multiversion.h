// MONSOON_MULTIVERSION before a function with a hot elementwise loop compiles it twice, for
// x86-64-v3 (AVX2, FMA, F16C: 8 floats a step, hardware half floats) and for any x86-64
// (SSE2), and lets the loader pick per machine by the CPU's features (GCC function
// multiversioning; "arch=haswell" would dispatch on the exact CPU model, not its features).
// The binary stays portable; servers on modern CPUs scan and update chunks at memory speed.
// Elsewhere it expands to nothing. Results are identical across versions: ISO C++ mode does
// not contract a*b+c into FMA.
#ifndef MONSOON_CORE_MULTIVERSION_H_
#define MONSOON_CORE_MULTIVERSION_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define MONSOON_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MONSOON_MULTIVERSION
#endif

#endif  // MONSOON_CORE_MULTIVERSION_H_
