"""Finds the CUDA toolkit when Bazel loads the workspace.

Creates the repository @local_cuda with
  defs.bzl   CUDA_AVAILABLE (bool), NVCC (path), CUDA_PATH
  BUILD      :cuda_libs, linking cudart, cuBLAS and cuBLASLt (empty without CUDA)
The toolkit is looked for at $MONSOON_CUDA_PATH (default /usr/local/cuda); without nvcc and
cublas_v2.h there, CUDA targets are left out and everything else builds as usual.
"""

def _local_cuda_impl(ctx):
    path = ctx.os.environ.get("MONSOON_CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(path + "/bin/nvcc")
    available = nvcc.exists and ctx.path(path + "/include/cublas_v2.h").exists
    ctx.file("WORKSPACE", "workspace(name = \"local_cuda\")\n")
    if available:
        ctx.file("defs.bzl", "CUDA_AVAILABLE = True\nNVCC = \"%s\"\nCUDA_PATH = \"%s\"\n" % (nvcc, path))
        ctx.file("BUILD", """cc_library(
    name = "cuda_libs",
    linkopts = ["-L{p}/lib64", "-lcublasLt", "-lcublas", "-lcudart", "-Wl,-rpath,{p}/lib64"],
    visibility = ["//visibility:public"],
)
""".format(p = path))
    else:
        ctx.file("defs.bzl", "CUDA_AVAILABLE = False\nNVCC = \"\"\nCUDA_PATH = \"\"\n")
        ctx.file("BUILD", "cc_library(\n    name = \"cuda_libs\",\n    visibility = [\"//visibility:public\"],\n)\n")

local_cuda = repository_rule(
    implementation = _local_cuda_impl,
    environ = ["MONSOON_CUDA_PATH"],
    local = True,
)
