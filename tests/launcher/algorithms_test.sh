#!/usr/bin/env bash
# Every algorithm end to end with real processes, its payloads through shared memory
# (transport.local shm) and again through gRPC: each recovers y = 2.5 x - 1.25;
# a sync job whose workers have uneven shards exits 0; an SSP job never lets a worker start a
# step more than `bound` pushes ahead of the slowest (from the metrics); `monsoon compare`
# writes its table and plot.
source tests/launcher/test_lib.sh

# both_paths NAME --set ... : run_linear NAME through shared memory, NAME-grpc through gRPC.
both_paths() {
  local name="$1"
  shift
  run_linear "$name" --set transport.local=shm "$@"
  run_linear "$name-grpc" --set transport.local=grpc "$@"
}

both_paths downpour
both_paths overlap --set transport.overlap=push
both_paths sync --set training.algorithm=sync --set optimizer.learning_rate=0.04
both_paths ssp --set training.algorithm=ssp --set ssp.bound=1
both_paths easgd --set training.algorithm=easgd --set easgd.learning_rate=0.05
both_paths eamsgd --set training.algorithm=eamsgd --set easgd.learning_rate=0.005 \
  --set easgd.momentum=0.9
both_paths dc_asgd --set staleness.dc_lambda=0.5 --set staleness.policy=scale
both_paths fp16 --set transport.compression=fp16
both_paths topk --set transport.compression=topk --set transport.topk_fraction=0.5
grep -q "through shared memory with 1 of 1 servers" "$WORK/sync/logs/worker-0.log" \
  && grep -q "through shared memory with 0 of 1 servers" "$WORK/sync-grpc/logs/worker-0.log" \
  && pass "each worker's log names the servers it reaches through shared memory" \
  || fail "no shared-memory line (or the wrong one) in the sync jobs' worker logs"
python3 - "$WORK" <<'PY'
import csv, sys
sent = {c: sum(float(list(csv.DictReader(open(f"{sys.argv[1]}/{c}/metrics/worker-{i}.csv")))[-1]["bytes_sent"])
               for i in range(2)) for c in ["sync", "fp16"]}
print("bytes pushed: float32 (sync job)", sent["sync"], "fp16", sent["fp16"])
assert sent["fp16"] * 2 == sent["sync"], sent
PY
expect_eq "fp16 pushes half the bytes" "$?" "0"
run_linear warm --set downpour.warm_start_steps=100 --set optimizer.type=adam \
  --set optimizer.learning_rate=0.01
# A learning-rate warm-up and a light weight decay still fit the line, on the servers'
# optimizer and in EASGD's local steps.
run_linear warmup_wd --set training.warmup_epochs=2 --set optimizer.weight_decay=0.0001
run_linear easgd_wd --set training.algorithm=easgd --set easgd.learning_rate=0.05 \
  --set optimizer.weight_decay=0.0001 --set training.warmup_epochs=1
# A strong weight decay shrinks the fit to the ridge-regression solution of the training set:
# (m, b) minimising mean(½ (m x + b - y)²) + ½ λ (m² + b²).
timeout 240 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/ridge" \
  --set optimizer.weight_decay=0.3 --set training.epochs=40 >"$WORK/ridge.txt" 2>&1
expect_eq "ridge: exit status" "$?" "0"
python3 -c '
import csv, json, sys
p = {t["name"]: t["values"] for t in json.load(open(sys.argv[1]))["parameters"]}
m, b = p["dense0.weight"][0], p["dense0.bias"][0]
rows = [tuple(float(v) for v in r) for r in list(csv.reader(open(sys.argv[2])))[1:]]
n, lam = len(rows), 0.3
sxx = sum(x * x for x, _ in rows) / n; sx = sum(x for x, _ in rows) / n
sxy = sum(x * y for x, y in rows) / n; sy = sum(y for _, y in rows) / n
# Normal equations: (sxx + lam) m + sx b = sxy;  sx m + (1 + lam) b = sy.
det = (sxx + lam) * (1 + lam) - sx * sx
m_star, b_star = (sxy * (1 + lam) - sx * sy) / det, ((sxx + lam) * sy - sx * sxy) / det
print(f"ridge: learned m={m:.4f} b={b:.4f}; solution m={m_star:.4f} b={b_star:.4f}")
sys.exit(0 if abs(m - m_star) < 0.03 and abs(b - b_star) < 0.03 else 1)
' "$WORK/ridge/summary.json" configs/data/linear_train.csv
expect_eq "weight decay 0.3 learns the ridge solution, not the line" "$?" "0"

# Sync with uneven shards: 4000 rows over 3 workers are 1333, 1333 and 1334 rows, so at 31
# rows a batch worker 2 takes 44 steps per epoch and the others 43: they run out of data
# at different rounds, and the job must still end cleanly.
run_linear sync_uneven --set training.algorithm=sync --set cluster.workers=3 \
  --set training.batch_size=31 --set optimizer.learning_rate=0.04
python3 - "$WORK/sync_uneven/metrics" <<'PY'
import csv, sys
steps = [int(float(list(csv.DictReader(open(f"{sys.argv[1]}/worker-{i}.csv")))[-1]["step"]))
         for i in range(3)]
print("sync_uneven: steps per worker", steps)
assert steps == [860, 860, 880], steps
PY
expect_eq "sync_uneven: workers took different step counts" "$?" "0"

# SSP: each worker's row k is step k, which began at clock k - 1 after a pull that saw the
# slowest live worker's clock; the lead may never exceed the bound.
python3 - "$WORK/ssp/metrics" 1 <<'PY'
import csv, sys
bound, lead_max, rows = int(sys.argv[2]), 0, 0
for i in range(2):
    for r in csv.DictReader(open(f"{sys.argv[1]}/worker-{i}.csv")):
        lead = float(r["step"]) - 1 - float(r["slowest_clock"])
        lead_max, rows = max(lead_max, lead), rows + 1
print(f"ssp: largest lead over the slowest worker {lead_max:.0f} in {rows} steps (bound {bound})")
assert rows == 2 * 800 and lead_max <= bound
PY
expect_eq "ssp: no worker more than bound ahead" "$?" "0"

# Staleness is recorded per server and reported by the compare table.
[ -s "$WORK/ssp/metrics/staleness-server-0.csv" ] && pass "staleness histogram written" \
  || fail "no staleness histogram"

# A short study: two variants with two seeds each, their table and plot.
cat >"$WORK/study.yaml" <<YAML
study: linear_study
base: $PWD/configs/linear_regression.yaml
set: {evaluation.interval_seconds: 0.05}
variants:
  - name: sync
    set: {training.algorithm: sync, optimizer.learning_rate: 0.04}
  - name: easgd
    set: {training.algorithm: easgd, easgd.learning_rate: 0.02}
YAML
timeout 240 "$MONSOON" compare "$WORK/study.yaml" --out "$WORK/study" --seeds 2 \
  >"$WORK/study.txt" 2>&1
expect_eq "compare: exit status" "$?" "0"
tail -2 "$WORK/study.txt"
python3 - "$WORK/study" <<'PY'
import csv, sys, xml.dom.minidom
rows = list(csv.DictReader(open(f"{sys.argv[1]}/compare.csv")))
assert [r["variant"] for r in rows] == ["sync", "easgd"] * 2, rows
assert [r["algorithm"] for r in rows] == ["sync", "easgd"] * 2, rows
seed = int(rows[0]["seed"])
assert [int(r["seed"]) for r in rows] == [seed, seed, seed + 1, seed + 1], rows
for name in ("sync", "easgd"):
    for s in (seed, seed + 1):
        assert f"seed: {s}\n" in open(f"{sys.argv[1]}/{name}/seed-{s}/config.yaml").read()
for r in rows:
    assert r["status"] == "ok" and float(r["bytes_sent"]) > 0 and float(r["samples_per_second"]) > 0
    assert float(r["wall_seconds"]) > 0, r
    assert float(r["final_test_loss"]) < 0.01 and r["seconds_to_target"] == "", r
md = open(f"{sys.argv[1]}/compare.md").read()
assert "| sync | %d | sync | quorum=2/2" % seed in md, md
assert "## Over seeds" in md and "| easgd | 2 of 2 | " in md, md
svg = xml.dom.minidom.parse(f"{sys.argv[1]}/compare.svg")
lines = svg.getElementsByTagName("polyline")
assert len(lines) == 12, len(lines)   # 2 variants x 2 seeds x 3 panels
# This job is so short that the evaluator may only score the final weights: >= 1 point.
assert all(len(l.getAttribute("points").split()) >= 1 for l in lines)
texts = " ".join(t.firstChild.data for t in svg.getElementsByTagName("text") if t.firstChild)
assert "wall time (s)" in texts and "epochs" in texts and "GB sent" in texts, texts
assert "test loss" in texts, texts
print("compare: table, markdown and plot check out")
PY
expect_eq "compare: csv, md and svg" "$?" "0"
finish
