#!/usr/bin/env bash
# The GPU checks in one command, for a machine with an NVIDIA GPU and the CUDA toolkit:
# lists the devices, runs the CPU<->GPU parity tests and the Fashion-MNIST job on the GPU,
# then the GPU benchmark (FP32 and TF32). Results go to OUT_DIR (default gpu_check/).
#   tools/gpu_check.sh [OUT_DIR]
# Fails if there is no usable GPU: a check that silently skipped would prove nothing.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-gpu_check}" && cd "${1:-gpu_check}" && pwd)"
cd "$root"
tools/install_deps.sh >&2 || exit 1
bazel build --noshow_progress //launcher:monsoon //bench:gpu_bench >&2 || exit 1
if ! bazel-bin/launcher/monsoon devices | tee "$out/devices.txt"; then
  echo "gpu_check: no usable GPU; nothing was checked" >&2
  exit 1
fi
status=0
bazel test --noshow_progress --test_output=all --cache_test_results=no \
  //tests/worker:cublas_parity_test //tests/launcher:gpu_job_test >"$out/tests.log" 2>&1 || status=1
if grep -q "skipped: no GPU" "$out/tests.log"; then
  echo "gpu_check: a GPU test skipped although a GPU is listed" >&2
  status=1
fi
grep -E "PASSED|FAILED|final_test_accuracy|GPU accuracy" "$out/tests.log"
bazel-bin/bench/gpu_bench | tee "$out/gpu_bench.json" || status=1
bazel-bin/bench/gpu_bench --tf32 | tee "$out/gpu_bench_tf32.json" || status=1
echo "gpu_check: results in $out (status $status)"
exit "$status"
