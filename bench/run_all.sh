#!/usr/bin/env bash
# The whole benchmark suite in one command. Runs every benchmark, each against its reference
# measured in the same run, prints one table of the headline ratios next to their targets
# and writes every figure to OUT_DIR/bench.json (the benchmarks' own JSON, plus the scaling
# runs). Figures and their meaning: bench/RESULTS.md.
#
#   bench/run_all.sh [--quick] [--check] [OUT_DIR]     (default OUT_DIR: runs/bench/TIMESTAMP)
#
# --quick shortens every benchmark (CI runs it so that none rots); its figures are not the
# ones to quote. --check exits 1 when a target is missed, naming each. Binaries come from bazel-bin (built here), or from $MONSOON_BENCH_BIN when
# set (a tree with bench/* and launcher/monsoon, e.g. a test's runfiles).
set -euo pipefail
quick=0 check=0
while [ "${1:-}" = "--quick" ] || [ "${1:-}" = "--check" ]; do
  if [ "$1" = "--quick" ]; then quick=1; else check=1; fi
  shift
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/runs/bench/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ -n "${MONSOON_BENCH_BIN:-}" ]; then
  bin="$MONSOON_BENCH_BIN"
else
  (cd "$root" && bazel build --noshow_progress //bench:all //launcher:monsoon) >&2
  bin="$root/bazel-bin"
fi

if [ "$quick" = 1 ]; then
  transport=(--sizes 1,4,16 --reps 3); apply=(--mib 8 --reps 3); compute=(--steps 10)
  compute_cnn=(--model cnn --steps 2); pytorch_cnn=(--steps 3); python_client=(--mib 4 --reps 3 --rounds 1)
  compute_resnet=(--model resnet --steps 2); pytorch_resnet=(--model resnet --steps 2)
  worker=(--steps 200 --rounds 2); workers=(1 2); servers=(1 2); scale_steps=20; sim_epochs=1
  hdf5_steps=20; head_to_head=(--steps 100 --reps 1)
else
  transport=(--sizes 1,4,16,64,256 --reps 20); apply=(--mib 64 --reps 10); compute=(--steps 200)
  compute_cnn=(--model cnn --steps 80); pytorch_cnn=(--steps 40); python_client=(--mib 64 --reps 20 --rounds 5)
  compute_resnet=(--model resnet --steps 40); pytorch_resnet=(--model resnet --steps 20)
  worker=(--steps 10000); workers=(1 2 4 8); servers=(1 2 4); scale_steps=200; sim_epochs=3
  hdf5_steps=400; head_to_head=(--steps 1500 --reps 3)
fi

run() {  # NAME COMMAND...: runs a benchmark, its stdout to OUT/NAME.out
  local name="$1"
  shift
  echo "== $name: $*" >&2
  timeout 900 "$@" >"$out/$name.out"
}
run transport "$bin/bench/transport_bench" "${transport[@]}"
run apply "$bin/bench/apply_bench" "${apply[@]}"
run compute "$bin/bench/compute_bench" "${compute[@]}"
run compute_cnn "$bin/bench/compute_bench" "${compute_cnn[@]}"
# The same network's step in PyTorch (Debian's python3-torch), one thread as compute_bench.
run pytorch_cnn /usr/bin/python3 "$root/bench/pytorch_cnn_bench.py" "${pytorch_cnn[@]}"
run compute_resnet "$bin/bench/compute_bench" "${compute_resnet[@]}"
run pytorch_resnet /usr/bin/python3 "$root/bench/pytorch_cnn_bench.py" "${pytorch_resnet[@]}"
run worker "$bin/bench/worker_bench" "${worker[@]}"
# The Python client (monsoon.Client) against the C++ one, both to a transport_bench server.
package="$bin/python"
[ -e "$package/monsoon/__init__.py" ] || package="$bin/launcher/monsoon.runfiles/monsoon/python"
run python_client env PYTHONPATH="$package" /usr/bin/python3 "$root/bench/python_client_bench.py" \
  "$bin/bench/transport_bench" "${python_client[@]}"
# The default MLP job against a bare PyTorch process and a PyTorch RPC parameter server.
run head_to_head /usr/bin/python3 "$root/bench/head_to_head.py" --monsoon "$bin/launcher/monsoon" \
  "${head_to_head[@]}"

# Scaling: the default Fashion-MNIST job (Downpour, every step) with W workers and S servers,
# `scale_steps` steps per worker, no evaluator. On 2 cores this shows overheads, not speed-up.
# The learning rate is a quarter of the job's: with 8 workers on 2 cores a gradient is ~6
# pushes stale, and at 0.02 with momentum 0.9 the model can diverge (NaN) within 200 steps.
for s in "${servers[@]}"; do
  for w in "${workers[@]}"; do
    echo "== scaling: $w workers, $s servers" >&2
    timeout 600 "$bin/launcher/monsoon" run "$root/configs/fmnist_downpour.yaml" \
      --run-dir "$out/scaling/w$w-s$s" --set cluster.workers="$w" --set cluster.servers="$s" \
      --set cluster.evaluator=false --set training.max_steps="$scale_steps" \
      --set optimizer.learning_rate=0.005 >/dev/null 2>&1 ||
      { echo "run_all: scaling run w$w-s$s failed: see $out/scaling/w$w-s$s/logs" >&2; exit 1; }
  done
done

# The simulator (README "Simulated clusters") against one real worker: the default job's
# `sim_epochs` epochs trained by 1 real worker, and by 64 simulated ones; no evaluator. Its
# samples per real second of training over the real worker's samples/s, each without its start
# (the worker's data load and connection; the simulation's setup_seconds, building its cluster).
simulator_run() {  # NAME SETTINGS...
  local name=$1
  shift
  echo "== simulator: $name" >&2
  timeout 600 "$bin/launcher/monsoon" run "$root/configs/fmnist_downpour.yaml" \
    --run-dir "$out/simulator/$name" --set cluster.evaluator=false \
    --set training.epochs="$sim_epochs" --set optimizer.learning_rate=0.002 "$@" >/dev/null 2>&1 ||
    { echo "run_all: simulator run $name failed: see $out/simulator/$name" >&2; exit 1; }
}
simulator_run real-1 --set cluster.workers=1
simulator_run simulated-64 --set cluster.workers=64 --set simulation.enabled=true \
  --set simulation.step_seconds=0.001

# Compressed HDF5 (README "Data"): the default job's MLP with 2 workers, no evaluator, on
# Fashion-MNIST as plain and gzip HDF5 (h5py's default chunks; bench/hdf5_files.py), each
# worker's shard held in memory, and streamed batch by batch (data.memory_budget_mib 22, a
# quarter of it). Training samples/s, and wall seconds (reading the shard included).
/usr/bin/python3 "$root/bench/hdf5_files.py" "$root/configs/fmnist_downpour.yaml" "$out/hdf5/files"
for kind in plain gzip; do
  for mode in held streamed; do
    echo "== hdf5: $kind, $mode" >&2
    timeout 600 "$bin/launcher/monsoon" run "$out/hdf5/files/job_$kind.yaml" \
      --run-dir "$out/hdf5/$kind-$mode" --set cluster.evaluator=false \
      --set training.max_steps="$hdf5_steps" --set data.memory_budget_mib="$([ "$mode" = held ] && echo 1024 || echo 22)" >/dev/null 2>&1 ||
      { echo "run_all: hdf5 run $kind-$mode failed: see $out/hdf5/$kind-$mode/logs" >&2; exit 1; }
  done
done

python3 - "$out" "$quick" "$check" <<'PY'
import csv, glob, json, os, sys
out, quick, check = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
def whole(name): return json.load(open(f"{out}/{name}.out"))
def last_line(name): return json.loads(open(f"{out}/{name}.out").read().strip().splitlines()[-1])
transport, apply, compute, worker = whole("transport"), last_line("apply"), whole("compute"), last_line("worker")
compute_cnn, pytorch_cnn = whole("compute_cnn"), whole("pytorch_cnn")
compute_resnet, pytorch_resnet = whole("compute_resnet"), whole("pytorch_resnet")
python_client = whole("python_client")
head_to_head = whole("head_to_head")
real_1 = json.load(open(f"{out}/simulator/real-1/summary.json"))
simulated = json.load(open(f"{out}/simulator/simulated-64/summary.json"))
simulated_samples = simulated["samples_per_second"] * simulated["training_seconds"]
facts = simulated["simulation"]
simulator = {"real_worker_samples_per_second": real_1["samples_per_second"],
             "simulated_workers": simulated["workers"],
             "setup_seconds": facts["setup_seconds"],
             "simulated_samples_per_real_second":
                 simulated_samples / (facts["real_seconds"] - facts["setup_seconds"])}
simulator["ratio"] = (simulator["simulated_samples_per_real_second"]
                      / simulator["real_worker_samples_per_second"])
scaling = []
for run in sorted(glob.glob(f"{out}/scaling/*")):
    s = json.load(open(f"{run}/summary.json"))
    comm = []
    for f in glob.glob(f"{run}/metrics/worker-*.csv"):
        last = list(csv.DictReader(open(f)))[-1]
        comm.append(float(last["comm_seconds"]) / float(last["wall_seconds"]))
    scaling.append({"workers": s["workers"], "servers": s["servers"],
                    "samples_per_second": s["samples_per_second"],
                    "comm_share": sum(comm) / len(comm)})
hdf5 = {}
for run in (f"{kind}-{mode}" for kind in ("plain", "gzip") for mode in ("held", "streamed")):
    s = json.load(open(f"{out}/hdf5/{run}/summary.json"))
    hdf5[run] = {"samples_per_second": s["samples_per_second"], "wall_seconds": s["wall_seconds"]}
for mode in ("held", "streamed"):
    gz, plain = hdf5[f"gzip-{mode}"], hdf5[f"plain-{mode}"]
    hdf5[f"{mode}_ratio"] = gz["samples_per_second"] / plain["samples_per_second"]
    hdf5[f"{mode}_wall_ratio"] = gz["wall_seconds"] / plain["wall_seconds"]
rows = []  # (what, figure, target)
by_mib = {r["mib"]: r for r in transport["results"]}
for mib in sorted(by_mib):
    r = by_mib[mib]
    rows.append((f"push goodput / TCP pump, {mib} MiB", r["push_ratio"], "0.7 at 64 MiB"))
    rows.append((f"pull goodput / TCP pump, {mib} MiB", r["pull_ratio"], "0.7 at 64 MiB"))
# The shared segment a server makes for a client on its host (transport.local shm).
for mib in sorted(by_mib):
    r = by_mib[mib]
    for way in ("push", "pull"):
        rows.append((f"shared-memory {way} / memcpy, {mib} MiB", r[f"shm_{way}_vs_memcpy"], ">= 0.9 at 64 MiB"))
        rows.append((f"  / the same {way} through gRPC", r[f"shm_{way}_vs_grpc"], ">= 3 at 64 MiB"))
# On a machine whose cores are all busy, goodput follows CPU per byte (both processes').
if 64 in by_mib:
    r, cores = by_mib[64], transport["cores"]
    for way in ("push", "pull"):
        rows.append((f"{way} CPU per byte / pump's, 64 MiB", r[f"{way}_cpu_vs_pump"], ""))
        rows.append((f"  {way} goodput / pump at that cost on {cores} busy cores", r[f"{way}_cpu_ceiling"], ""))
if 64 in by_mib and 256 in by_mib:
    rows.append(("push 256 MiB / push 64 MiB", by_mib[256]["push_gbps"] / by_mib[64]["push_gbps"], ">= 0.9"))
    rows.append(("pull 256 MiB / pull 64 MiB", by_mib[256]["pull_gbps"] / by_mib[64]["pull_gbps"], ">= 0.9"))
# The target is for the plain update (SGD). A rule with optimizer state moves more bytes per
# gradient byte than memcpy does (traffic / 2 times as many): its bandwidth next to memcpy's
# is ratio * traffic / 2.
for r in apply["rules"]:
    target = ">= 0.5" if r["rule"] == "downpour sgd" else (
        f"moves {r['traffic'] / 2:.1f}x memcpy's bytes: {r['ratio_vs_memcpy'] * r['traffic'] / 2:.2f} of its bandwidth")
    rows.append((f"server apply / memcpy: {r['rule']}", r["ratio_vs_memcpy"], target))
# A worker's gradient is checked for NaN and infinity in its copy out of the model, so that the
# push needs no pass of its own.
copy = apply["gradient_copy"]
rows.append(("worker gradient copy, checked in the copy / memcpy", copy["checked_in_copy_vs_memcpy"], ">= 0.9"))
rows.append(("  copied, then scanned separately / memcpy", copy["copy_then_scan_vs_memcpy"], ""))
for r in compute["results"]:
    rows.append((f"CPU step / same-shape SGEMMs, batch {r['batch']}", r["ratio"], ""))
# The worker loop: each loop, its target against the lone worker, and its modes (the
# worker_bench key of each transport.overlap setting, "none" first).
worker_loops = [
    ("Downpour every step", 0.6, [("downpour", "none"), ("downpour_push", "push"),
                                  ("downpour_push_pull", "push_pull")]),
    (f"EASGD tau {worker['tau']}", 0.9, [("easgd", "none"), ("easgd_overlap", "push")])]
for loop, target, modes in worker_loops:
    for key, overlap in modes:
        rows.append((f"worker samples/s / alone: {loop}, overlap {overlap}",
                     worker[f"{key}_ratio"], f">= {target}"))
        rows.append((f"  share of time in communication", worker[f"{key}_comm_share"], ""))
rows.append(("worker samples/s, data streamed from .npy / held in memory",
             worker["streamed_data_ratio"], ">= 0.8"))
for mode in ("held", "streamed"):
    rows.append((f"MLP job on gzip HDF5 / plain HDF5, shard {mode}: samples/s", hdf5[f"{mode}_ratio"], ""))
    rows.append((f"  wall seconds, reading the shard included", hdf5[f"{mode}_wall_ratio"], ""))
print(f"\nMonsoon benchmark suite{' (--quick: shortened, not for quoting)' if quick else ''}: {out}\n")
width = max(len(what) for what, _, _ in rows)
print(f"{'figure':<{width}} {'value':>8}  target")
for what, value, target in rows:
    print(f"{what:<{width}} {value:>8.3f}  {target}")
# Issue 6's targets, each against its figure from this run. The worker-loop targets count the
# best of the loop's modes, named: overlap is how a worker reaches them where a step's compute
# takes about as long as its round trip.
def verdict(ok): return "met" if ok else "NOT met"
checks = []
if 64 in by_mib:
    push, pull = by_mib[64]["push_ratio"], by_mib[64]["pull_ratio"]
    checks.append(("push and pull at 64 MiB >= 0.7 of the pump", min(push, pull) >= 0.7,
                   f"{push:.3f} / {pull:.3f}"))
if 64 in by_mib:
    r = by_mib[64]
    checks.append(("shared-memory push and pull at 64 MiB >= 0.9 of memcpy",
                   min(r["shm_push_vs_memcpy"], r["shm_pull_vs_memcpy"]) >= 0.9,
                   f"{r['shm_push_vs_memcpy']:.3f} / {r['shm_pull_vs_memcpy']:.3f}"))
    checks.append(("shared-memory push and pull at 64 MiB >= 3x gRPC's",
                   min(r["shm_push_vs_grpc"], r["shm_pull_vs_grpc"]) >= 3,
                   f"{r['shm_push_vs_grpc']:.2f} / {r['shm_pull_vs_grpc']:.2f}"))
if 64 in by_mib and 256 in by_mib:
    push = by_mib[256]["push_gbps"] / by_mib[64]["push_gbps"]
    pull = by_mib[256]["pull_gbps"] / by_mib[64]["pull_gbps"]
    checks.append(("256 MiB >= 0.9 of 64 MiB, push and pull", min(push, pull) >= 0.9,
                   f"{push:.3f} / {pull:.3f}"))
sgd = next(r["ratio_vs_memcpy"] for r in apply["rules"] if r["rule"] == "downpour sgd")
checks.append(("server apply (SGD) >= 0.5 of memcpy", sgd >= 0.5, f"{sgd:.3f}"))
for loop, target, modes in worker_loops:
    key, overlap = max(modes, key=lambda m: worker[f"{m[0]}_ratio"])
    best = worker[f"{key}_ratio"]
    without = worker[f"{modes[0][0]}_ratio"]
    checks.append((f"{loop} >= {target} of the lone worker", best >= target,
                   f"{best:.3f} without overlap" if overlap == "none" else
                   f"{best:.3f} with overlap {overlap}; without {without:.3f}"))
print(f"\nissue 6 targets in this run{' (--quick: not for quoting)' if quick else ''}:")
for what, ok, figures in checks:
    print(f"  {what:<50} {verdict(ok):<8} {figures}")
streamed = worker["streamed_data_ratio"]
checked_copy = copy["checked_in_copy_vs_memcpy"]
issue_36 = [("data streamed from .npy >= 0.8 of held in memory", streamed >= 0.8, f"{streamed:.3f}"),
            ("gradient copy checked for NaN >= 0.9 of memcpy", checked_copy >= 0.9,
             f"{checked_copy:.3f}")]
print(f"\nissue 36 targets in this run{' (--quick: not for quoting)' if quick else ''}:")
for what, ok, figures in issue_36:
    print(f"  {what:<50} {verdict(ok):<8} {figures}")
checks += issue_36

print(f"\n{'scaling (Downpour, fmnist MLP)':<34} {'samples/s':>10} {'comm share':>11}")
for r in scaling:
    print(f"{r['workers']} worker(s), {r['servers']} server(s){'':<13} {r['samples_per_second']:>10.0f} {r['comm_share']:>11.3f}")
def network_checks(title, issue, ours, torch, speedup):
    """The table of a network's step against PyTorch's and its primitives', and its targets:
    at least `speedup` times PyTorch's samples/s and 0.8 of its primitives alone."""
    torch_at = {r["batch"]: r["step_samples_per_second"] for r in torch["results"]}
    print(f"\n{title + ', 1 thread':<38} {'samples/s':>10} {'PyTorch':>8} {'/ PyTorch':>10} "
          f"{'/ primitives':>13}")
    for r in ours["results"]:
        print(f"batch {r['batch']:<32} {r['step_samples_per_second']:>10} {torch_at[r['batch']]:>8} "
              f"{r['step_samples_per_second'] / torch_at[r['batch']]:>10.2f} {r['ratio']:>13.3f}")
    name = title.split()[0]
    found = [
        (f"{name} step >= {speedup:g}x PyTorch 1.13, batch 64 and 256",
         all(r["step_samples_per_second"] >= speedup * torch_at[r["batch"]] for r in ours["results"]),
         " / ".join(f"{r['step_samples_per_second'] / torch_at[r['batch']]:.2f}" for r in ours["results"])),
        (f"{name} step >= 0.8 of its primitives alone", all(r["ratio"] >= 0.8 for r in ours["results"]),
         " / ".join(f"{r['ratio']:.3f}" for r in ours["results"]))]
    print(f"\nissue {issue} targets in this run{' (--quick: not for quoting)' if quick else ''}:")
    for what, ok, figures in found:
        print(f"  {what:<50} {verdict(ok):<8} {figures}")
    return found
checks += network_checks("CNN step (fmnist_cnn)", 23, compute_cnn, pytorch_cnn, 1)
checks += network_checks("ResNet step (fmnist_resnet)", 33, compute_resnet, pytorch_resnet, 1.5)
pc = python_client
print(f"\nPython client (monsoon.Client), {pc['mib']} MiB: push {pc['python_push_gbps']:.3f} GB/s "
      f"(C++ {pc['cpp_push_gbps']:.3f}), pull {pc['python_pull_gbps']:.3f} GB/s (C++ {pc['cpp_pull_gbps']:.3f})")
client_check = ("Python client push and pull >= 0.95 of C++'s",
                min(pc["push_ratio"], pc["pull_ratio"]) >= 0.95,
                f"{pc['push_ratio']:.3f} / {pc['pull_ratio']:.3f} at {pc['mib']} MiB")
print(f"\nissue 24 target in this run{' (--quick: not for quoting)' if quick else ''}:")
print(f"  {client_check[0]:<50} {verdict(client_check[1]):<8} {client_check[2]}")
checks.append(client_check)
h2h = head_to_head
print(f"\nthe default MLP job, samples/s (medians): Monsoon 1 server + 1 worker {h2h['median']['monsoon_1x1']:.0f}, "
      f"bare PyTorch {h2h['median']['pytorch']:.0f}; Downpour, 2 workers {h2h['median']['monsoon_k2']:.0f}, "
      f"PyTorch RPC parameter server {h2h['median']['rpc_k2']:.0f}")
h2h_checks = [
    ("MLP job, 1 server + 1 worker >= 0.9x bare PyTorch", h2h["monsoon_1x1_vs_pytorch"] >= 0.9,
     f"{h2h['monsoon_1x1_vs_pytorch']:.2f}"),
    ("Downpour K=2 >= 3x a PyTorch RPC server", h2h["monsoon_k2_vs_rpc_k2"] >= 3,
     f"{h2h['monsoon_k2_vs_rpc_k2']:.2f}")]
print(f"\nissue 48 targets in this run{' (--quick: not for quoting)' if quick else ''}:")
for what, ok, figures in h2h_checks:
    print(f"  {what:<50} {verdict(ok):<8} {figures}")
checks += h2h_checks
sim_check = ("simulator >= 0.8 of one real worker's samples/s", simulator["ratio"] >= 0.8,
             f"{simulator['ratio']:.3f} ({simulator['simulated_samples_per_real_second']:.0f} "
             f"with {simulator['simulated_workers']} simulated workers, "
             f"{simulator['real_worker_samples_per_second']:.0f} real)")
print(f"\nissue 34 target in this run{' (--quick: not for quoting)' if quick else ''}:")
print(f"  {sim_check[0]:<50} {verdict(sim_check[1]):<8} {sim_check[2]}")
checks.append(sim_check)
json.dump({"quick": quick, "transport": transport, "apply": apply, "compute": compute,
           "compute_cnn": compute_cnn, "pytorch_cnn": pytorch_cnn, "python_client": python_client,
           "compute_resnet": compute_resnet, "pytorch_resnet": pytorch_resnet,
           "head_to_head": head_to_head, "worker": worker, "scaling": scaling, "simulator": simulator, "hdf5": hdf5,
           "targets": [{"target": what, "met": ok, "figures": figures}
                       for what, ok, figures in checks]},
          open(f"{out}/bench.json", "w"), indent=1)
print(f"\nall figures: {out}/bench.json")
missed = [f"{what} ({figures})" for what, ok, figures in checks if not ok]
if check and missed:
    print(f"run_all: {len(missed)} target(s) missed:\n  " + "\n  ".join(missed), file=sys.stderr)
    sys.exit(1)
PY
