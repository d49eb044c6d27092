#!/usr/bin/env bash
# configs/large_mlp.yaml: a 107-million-parameter MLP (428 MB of weights) sharded over 4
# servers trains (10 steps per worker, every step pulling and pushing all 428 MB), and every
# server's peak resident memory stays within 1.3x what it holds per chunk (its metrics'
# state_bytes: the shard's weights, optimizer state and the chunk window its workers read),
# plus the shared segments its workers' chunks travel through (resident in the server too: per
# worker 3 x max_in_flight slots of one 1 MiB chunk).
source tests/launcher/test_lib.sh

timeout 300 "$MONSOON" run configs/large_mlp.yaml --run-dir "$WORK/large" >"$WORK/out.txt" 2>&1
expect_eq "large job exit status" "$?" "0"
grep -v '^\[' "$WORK/out.txt" | tail -2
python3 - "$WORK/large" <<'PY'
import csv, json, os, sys
run = sys.argv[1]
s = json.load(open(f"{run}/summary.json"))
assert s["num_parameters"] >= 100_000_000, s["num_parameters"]
# No evaluator: params.bin is assembled from the 4 servers' final checkpoints.
assert s["params_from"] == "server checkpoints", s["params_from"]
assert os.path.getsize(s["params_file"]) == 4 * s["num_parameters"]
segments = 2 * 3 * 2 * 2**20  # workers x slots per in-flight call x max_in_flight x chunk
for j in range(4):
    last = list(csv.DictReader(open(f"{run}/metrics/server-{j}.csv")))[-1]
    state, peak = float(last["state_bytes"]), float(last["peak_rss_bytes"])
    print(f"server {j}: peak RSS {peak / 2**20:.0f} MiB for {state / 2**20:.0f} MiB of weights, "
          f"momentum and window and {segments / 2**20:.0f} MiB of segments: "
          f"{(peak - segments) / state:.2f}x")
    assert peak - segments <= 1.3 * state, (j, peak, state)
    assert float(last["pushes_applied"]) > 0
print(f"{s['num_parameters']:,} parameters, {s['training_seconds']:.1f} s of training")
PY
expect_eq "every server's peak RSS <= 1.3x its shard + its segments" "$?" "0"
finish
