#!/usr/bin/env bash
# bench/run_all.sh --quick --check: every benchmark of the suite runs to the end under a time
# limit and reports every figure (the figures themselves are benchmarks' business, not
# tests'); --check fails exactly when a target is missed, naming each.
source tests/launcher/test_lib.sh

MONSOON_BENCH_BIN="$PWD" timeout 600 bench/run_all.sh --quick --check "$WORK/bench" \
  >"$WORK/out.txt" 2>&1
status=$?
tail -42 "$WORK/out.txt"
python3 - "$WORK/bench/bench.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
assert b["quick"] is True
assert [r["mib"] for r in b["transport"]["results"]] == [1, 4, 16]
assert all(r["push_ratio"] > 0 and r["pull_ratio"] > 0 for r in b["transport"]["results"])
assert all(r[f"{way}_cpu_s_per_gb"] > 0 and r[f"{way}_cpu_ceiling"] > 0
           for r in b["transport"]["results"] for way in ("push", "pull"))
assert b["transport"]["cores"] >= 1
assert len(b["apply"]["rules"]) == 7 and all(r["ratio_vs_memcpy"] > 0 for r in b["apply"]["rules"])
assert all(v > 0 for v in b["apply"]["gradient_copy"].values()), b["apply"]["gradient_copy"]
assert all(r["ratio"] > 0 for r in b["compute"]["results"])
for key in ["downpour", "downpour_push", "downpour_push_pull", "easgd", "easgd_overlap"]:
    assert b["worker"][f"{key}_ratio"] > 0 and 0 <= b["worker"][f"{key}_comm_share"] <= 1, key
assert b["worker"]["streamed_data_ratio"] > 0
assert all(b["hdf5"][f"{mode}_ratio"] > 0 and b["hdf5"][f"{mode}_wall_ratio"] > 0
           for mode in ("held", "streamed")), b["hdf5"]
assert len(b["scaling"]) == 4 and all(r["samples_per_second"] > 0 for r in b["scaling"])
# --quick has no 64 or 256 MiB figures: the apply and the two worker-loop targets are judged.
assert [t["target"].split(" >=")[0] for t in b["targets"]] == [
    "server apply (SGD)", "Downpour every step", "EASGD tau 8", "data streamed from .npy",
    "gradient copy checked for NaN", "CNN step", "CNN step",
    "ResNet step", "ResNet step", "Python client push and pull", "MLP job, 1 server + 1 worker",
    "Downpour K=2", "simulator"], b["targets"]
h2h = b["head_to_head"]
assert all(len(v) == 1 and v[0] > 0 for v in h2h["samples_per_second"].values()), h2h
sim = b["simulator"]
assert sim["simulated_workers"] == 64 and sim["ratio"] > 0, sim
pc = b["python_client"]
assert pc["mib"] == 4 and all(pc[k] > 0 for k in ("python_push_gbps", "cpp_push_gbps",
                                                  "python_pull_gbps", "cpp_pull_gbps")), pc
for torch in ("pytorch_cnn", "pytorch_resnet"):
    assert [r["batch"] for r in b[torch]["results"]] == [64, 256], torch
    assert all(r["step_samples_per_second"] > 0 for r in b[torch]["results"]), torch
assert all(r["ratio"] > 0 for r in b["compute_resnet"]["results"])
assert all(isinstance(t["met"], bool) for t in b["targets"])
print("bench.json: every section present")
PY
expect_eq "bench.json complete" "$?" "0"
python3 - "$WORK/bench/bench.json" "$WORK/out.txt" "$status" <<'PY'
import json, sys
targets = json.load(open(sys.argv[1]))["targets"]
out, status = open(sys.argv[2]).read(), int(sys.argv[3])
missed = [t["target"] for t in targets if not t["met"]]
assert status == (1 if missed else 0), (status, missed)
assert all(f"  {m} (" in out for m in missed), missed
assert (f"run_all: {len(missed)} target(s) missed:" in out) == bool(missed)
print(f"--check: exit {status}, {len(missed)} missed target(s) named")
PY
expect_eq "run_all.sh --check fails exactly on a missed target, naming it" "$?" "0"
leftover=$(pgrep -f -- "$WORK" || true)
expect_eq "no benchmark process left running" "$leftover" ""
finish
