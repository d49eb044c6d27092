#!/usr/bin/env bash
# The GPU checks in one command, for a machine with an NVIDIA GPU, its driver and CUDA's
# libraries: lists the devices, runs the CPU<->GPU parity tests and the Fashion-MNIST job on the
# GPU, then the GPU benchmark (FP32 and TF32). Results go to OUT_DIR (default gpu_check/).
#   tools/gpu_check.sh [OUT_DIR]
# Runs from an unpacked bundle (tools/bundle.sh: no Bazel, no package archive needed) or from
# a checkout (installs what it needs and builds with Bazel). Fails if there is no usable GPU:
# a check that silently skipped would prove nothing.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-gpu_check}" && cd "${1:-gpu_check}" && pwd)" || {
  echo "gpu_check: cannot create ${1:-gpu_check}" >&2
  exit 1
}
cd "$root"
if [ -f BUNDLE ]; then  # an unpacked bundle (tools/make_bundle.sh marks it)
  monsoon=bin/monsoon parity=bin/cublas_parity_test gpu_bench=bin/gpu_bench
else
  tools/install_deps.sh >&2 || exit 1
  bazel build --noshow_progress //launcher:monsoon //bench:gpu_bench \
    //tests/worker:cublas_parity_test >&2 || exit 1
  monsoon=bazel-bin/launcher/monsoon parity=bazel-bin/tests/worker/cublas_parity_test
  gpu_bench=bazel-bin/bench/gpu_bench
fi
if ! "$monsoon" devices | tee "$out/devices.txt"; then
  echo "gpu_check: no usable GPU; nothing was checked" >&2
  exit 1
fi
status=0
export MONSOON_REQUIRE_GPU=1  # a GPU test that would skip fails instead
"$parity" >"$out/parity.log" 2>&1 || status=1
MONSOON="$PWD/$monsoon" TEST_TMPDIR="$(mktemp -d)" tests/launcher/gpu_job_test.sh \
  >"$out/gpu_job.log" 2>&1 || status=1
tail -3 "$out/parity.log"
grep -E "PASS|FAIL|final test accuracy" "$out/gpu_job.log"
"$gpu_bench" | tee "$out/gpu_bench.json" || status=1
"$gpu_bench" --tf32 | tee "$out/gpu_bench_tf32.json" || status=1
echo "gpu_check: results in $out (status $status)"
exit "$status"
