"""Bazel macros for CUDA code, compiled by nvcc where the toolkit is installed."""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

# Hopper (H100/H200) and Ampere (A100) code, plus PTX for newer GPUs.
_GENCODE = " ".join([
    "-gencode arch=compute_80,code=sm_80",
    "-gencode arch=compute_90,code=sm_90",
    "-gencode arch=compute_90,code=compute_90",
])

def _nvcc_command(cu_src):
    # Host code gets the warning flags of the rest of Monsoon (.bazelrc). 2810: nvcc's front
    # end flags assignments of [[nodiscard]] results (absl::Status) as discarded.
    return ("%s -std=c++17 -O3 %s -diag-suppress 2810 " % (NVCC, _GENCODE) +
            "-Xcompiler -fPIC,-Wall,-Wextra,-Werror,-Wno-unused-parameter " +
            "-I. -c $(location %s) -o $@" % cu_src)

def cuda_library(name, cu_src, hdrs, cu_hdrs = [], deps = [], visibility = None):
    """cc_library `name` from one .cu file, or nothing where CUDA is not installed.

    Args:
      name: the library.
      cu_src: the .cu source, compiled with nvcc -O3 (host code with -Wall -Wextra -Werror).
      hdrs: the library's plain C++ headers.
      cu_hdrs: other headers the .cu includes from this workspace.
      deps: cc deps (their system headers must be on nvcc's default include path).
      visibility: as for cc_library.
    """
    if not CUDA_AVAILABLE:
        return
    native.genrule(
        name = name + "_nvcc",
        srcs = [cu_src] + hdrs + cu_hdrs,
        outs = [name + ".o"],
        cmd = _nvcc_command(cu_src),
    )
    native.cc_library(
        name = name,
        srcs = [name + ".o"],
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cuda_libs"],
        visibility = visibility,
    )

def cuda_binary(name, cu_src, cu_hdrs = [], deps = [], visibility = None):
    """cc_binary `name` whose main() is in one .cu file; nothing where CUDA is not installed."""
    if not CUDA_AVAILABLE:
        return
    native.genrule(
        name = name + "_nvcc",
        srcs = [cu_src] + cu_hdrs,
        outs = [name + ".o"],
        cmd = _nvcc_command(cu_src),
    )
    native.cc_binary(
        name = name,
        srcs = [name + ".o"],
        deps = deps + ["@local_cuda//:cuda_libs"],
        visibility = visibility,
    )

def if_cuda(then, otherwise = []):
    """`then` where the CUDA toolkit is installed, else `otherwise`."""
    return then if CUDA_AVAILABLE else otherwise
