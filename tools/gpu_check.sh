#!/usr/bin/env bash
# The GPU checks in one command, for a machine with an NVIDIA GPU, its driver and CUDA's
# libraries, in order: the device query; the CPU<->GPU parity test; the full-size image layer
# (256 x 64 x 224 x 224); the Fashion-MNIST jobs on the GPU (their run directories kept in
# OUT_DIR/gpu_job_runs/); TensorBoard's own reader on the GPU job's event files (where the
# `tensorboard` package is installed); the default job on the CPUs, for the GPU's speed-up;
# the GPU benchmark (convolutions on cuDNN where found, then on im2col; then with cuBLASLt off
# for the dense layers) and the default job at
# each compute.precision (fp32, tf32, bf16: speed and accuracy); the default job with its round
# trips overlapped, and through gRPC (each job's comm_share); PyTorch on the same GPU as the
# yardstick (bench/gpu_peer.py, where python3 has a CUDA PyTorch); the MLP step's kernels under
# Nsight Compute (where the machine has ncu); last, the parity test under
# compute-sanitizer's memcheck and initcheck where the machine has it. Each step has a time
# limit (5 minutes; 10 for the jobs), so nothing hangs it.
# Writes OUT_DIR/gpu_check.json (the device's name and every figure) beside each step's log.
#   tools/gpu_check.sh [OUT_DIR]          (default OUT_DIR: gpu_check/)
# Runs from an unpacked bundle (tools/bundle.sh: no Bazel, no package archive needed) or from
# a checkout (installs what it needs and builds with Bazel). Fails if there is no usable GPU,
# and a GPU test that would skip fails instead (MONSOON_REQUIRE_GPU=1).
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
export MONSOON_REQUIRE_GPU=1  # a GPU test that would skip fails instead
# cuDNN for convolutions, pooling and batch norms (compute.cudnn_path: auto): the node's own where the
# dynamic linker or /usr/local/cuda has it, else the one in python3's PyTorch installation
# (its nvidia-cudnn package), after whatever LD_LIBRARY_PATH already names. The parity test
# covers cuDNN and Monsoon's own kernels alike; the benchmark runs on each.
torch_cudnn=$(python3 -c 'import os, nvidia.cudnn as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null)
if [ -n "$torch_cudnn" ] && [ -f "$torch_cudnn/libcudnn.so.9" ]; then
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$torch_cudnn"
fi
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
steps=()  # "name status" per step, for the JSON

# step NAME SECONDS COMMAND...: runs COMMAND with its output in OUT_DIR/NAME.log, stopped
# after SECONDS (status 124).
step() {
  local name=$1 limit=$2
  shift 2
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local status=$?
  steps+=("$name $status")
  echo "gpu_check: $name: $([ "$status" -eq 0 ] && echo passed || echo "FAILED (status $status)")"
}
step parity 300 "$parity"
step full_size_layer 300 "$parity" "[workspace]"
runs="$out/gpu_job_runs"
rm -rf "$runs" "$out/cpu_job" && mkdir -p "$runs"
step gpu_job 600 env MONSOON="$PWD/$monsoon" TEST_TMPDIR="$runs" tests/launcher/gpu_job_test.sh
step tensorboard 300 python3 tools/tensorboard_read.py "$runs/gpu" "$runs/gpu-cnn"
step cpu_job 600 "$monsoon" run configs/fmnist_downpour.yaml --run-dir "$out/cpu_job" \
  --set compute.device=cpu
step gpu_bench 300 sh -c "'$PWD/$gpu_bench' >'$out/gpu_bench.json'"
step gpu_bench_im2col 300 sh -c "'$PWD/$gpu_bench' --cudnn-path off >'$out/gpu_bench_im2col.json'"
step gpu_bench_no_cublaslt 300 sh -c \
  "'$PWD/$gpu_bench' --cublaslt off >'$out/gpu_bench_no_cublaslt.json'"
for precision in tf32 bf16; do
  step "gpu_bench_$precision" 300 sh -c \
    "'$PWD/$gpu_bench' --precision $precision >'$out/gpu_bench_$precision.json'"
done
for precision in fp32 tf32 bf16; do
  step "precision_$precision" 600 "$monsoon" run configs/fmnist_downpour.yaml \
    --run-dir "$runs/precision-$precision" --set compute.device=cuda \
    --set compute.precision="$precision"
done
# The default job's round trips to the servers: overlapped with the step, and through gRPC
# instead of the shared segment.
for transport in overlap=push_pull local=grpc; do
  step "transport_${transport#*=}" 600 "$monsoon" run configs/fmnist_downpour.yaml \
    --run-dir "$runs/transport-${transport#*=}" --set compute.device=cuda \
    --set "transport.$transport"
done
if [ -n "$ncu" ]; then  # the MLP's step at batch 64 kernel by kernel (Nsight Compute)
  step ncu_mlp_step 300 "$ncu" --launch-skip 600 --launch-count 40 \
    --metrics gpu__time_duration.sum "$PWD/$gpu_bench"
fi
step gpu_peer 600 sh -c "python3 bench/gpu_peer.py --monsoon-bench '$out/gpu_bench.json' \
  --monsoon-runs '$runs' >'$out/gpu_peer.json'"
if [ -n "$sanitizer" ]; then
  step parity_memcheck 300 "$sanitizer" --tool memcheck --error-exitcode 1 "$parity"
  step parity_initcheck 300 "$sanitizer" --tool initcheck --error-exitcode 1 "$parity"
else
  echo "gpu_check: no compute-sanitizer on this machine; the parity test ran without it"
fi

python3 - "$out" "${steps[@]}" <<'PY'
import csv, glob, json, os, re, sys
out, steps = sys.argv[1], [s.split() for s in sys.argv[2:]]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError) as e:
        return {"unreadable": str(e)}
def job(run_dir):  # a job's figures, with its workers' mean share of time in round trips
    summary = load(f"{run_dir}/summary.json")
    figures = {k: summary.get(k) for k in ("samples_per_second", "final_test_accuracy", "wall_seconds")}
    shares = []
    for worker in glob.glob(os.path.join(out, run_dir, "metrics", "worker-*.csv")):
        rows = list(csv.DictReader(open(worker)))
        if rows:
            shares.append(float(rows[-1]["comm_share"]))
    figures["comm_share"] = round(sum(shares) / len(shares), 3) if shares else None
    return figures
devices = open(os.path.join(out, "devices.txt")).read().split("\n")
job_log = open(os.path.join(out, "gpu_job.log")).read()
gpu_job, cpu_job = job("gpu_job_runs/gpu"), job("cpu_job")
report = {
    "device": devices[0].strip(),
    "devices": [d.strip() for d in devices if d.strip() and not d.startswith("cpu: ")],
    "cpu_kernels": [d.strip() for d in devices if d.startswith("cpu: ")][:1],
    "steps": {name: ("passed" if status == "0" else f"failed ({status})") for name, status in steps},
    "layers": re.findall(r"layers on: (.*)",
                         open(os.path.join(out, "parity.log")).read())[:1],
    "gpu_job_accuracies": [float(a) for a in re.findall(r"accuracy ([0-9.]+) >=", job_log)],
    "tensorboard": open(os.path.join(out, "tensorboard.log")).read().strip(),
    "jobs_samples_per_second": {"gpu": gpu_job, "cpu": cpu_job},
    "gpu_bench": load("gpu_bench.json"),
    "gpu_bench_tf32": load("gpu_bench_tf32.json"),
    "gpu_bench_bf16": load("gpu_bench_bf16.json"),
    "gpu_bench_im2col": load("gpu_bench_im2col.json"),
    "gpu_bench_no_cublaslt": load("gpu_bench_no_cublaslt.json"),
    "precision_jobs": {p: job(f"gpu_job_runs/precision-{p}") for p in ("fp32", "tf32", "bf16")},
    "transport_jobs": {"gpu": gpu_job, **{run: job(f"gpu_job_runs/{run}")
                                          for run in ("transport-push_pull", "transport-grpc")}},
    "gpu_peer": load("gpu_peer.json"),
}
try:  # each profiled kernel's name and duration in microseconds
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}
    ncu_log = open(os.path.join(out, "ncu_mlp_step.log")).read()
    names = re.findall(r"^  (\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\), Context", ncu_log, re.M)
    times = [float(v.replace(",", "")) * scale[u] for u, v in
             re.findall(r"gpu__time_duration.sum\s+(\w+)\s+([\d.,]+)", ncu_log)]
    report["ncu_mlp_step_kernels_us"] = list(zip(names, times))
except (OSError, KeyError):
    pass
def speedups(on, off, key, on_figure="step_samples_per_second"):  # on / off, by batch
    try:
        return {str(a["batch"]): round(a[on_figure] / b["step_samples_per_second"], 3)
                for a, b in zip(on[key], off[key])}
    except (KeyError, TypeError, ZeroDivisionError):
        return None
models = ("step", "cnn_step", "resnet_step")
report["cublaslt_step_speedup"] = {
    key: speedups(report["gpu_bench"], report["gpu_bench_no_cublaslt"], key) for key in models}
# Each batch uploaded during the step before (Model::PrefetchBatch) against uploaded in its own.
report["prefetch_step_speedup"] = {
    key: speedups(report["gpu_bench"], report["gpu_bench"], key,
                  "prefetched_step_samples_per_second") for key in models}
if gpu_job["samples_per_second"] and cpu_job["samples_per_second"]:
    report["gpu_job_vs_cpu_job"] = round(gpu_job["samples_per_second"] / cpu_job["samples_per_second"], 3)
json.dump(report, open(os.path.join(out, "gpu_check.json"), "w"), indent=1)
print(f"gpu_check: {os.path.join(out, 'gpu_check.json')}")
PY
failed=0
for s in "${steps[@]}"; do [ "${s##* }" = 0 ] || failed=1; done
echo "gpu_check: results in $out ($([ "$failed" = 0 ] && echo "every step passed" || echo "a step FAILED"))"
exit "$failed"
