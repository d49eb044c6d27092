#!/usr/bin/env bash
# One push per node (cluster.aggregate_per_node) with real processes: each algorithm that pushes
# gradients fits y = 2.5 x - 1.25 through nodes of workers; the servers see one client per
# node, whose pushes carry half the bytes of per-worker pushes; a member with more steps than
# its pusher is served to its end; a lone last node, and the payloads through gRPC, work too;
# a killed member leaves its node pushing without it, a killed pusher takes its node with it,
# and the job carries on (reliability.worker_loss); a stopped job resumes; the combinations
# that make no sense are refused by name.
source tests/launcher/test_lib.sh

nodes=(--set cluster.workers=4 --set cluster.workers_per_node=2 --set cluster.aggregate_per_node=true)
run_linear per-worker --set cluster.workers=4
run_linear downpour "${nodes[@]}"
run_linear sync "${nodes[@]}" --set training.algorithm=sync --set optimizer.learning_rate=0.04 \
  --set transport.local=grpc
run_linear ssp "${nodes[@]}" --set training.algorithm=ssp --set ssp.bound=1 \
  --set transport.overlap=push --set transport.pull_with_push=false
run_linear lone --set cluster.workers=3 --set cluster.workers_per_node=2 \
  --set cluster.aggregate_per_node=true \
  --set transport.compression=fp16
# 4000 rows over 3 workers at 31 a batch: worker 2 takes 44 steps an epoch, its pusher 43.
run_linear uneven --set cluster.workers=3 --set cluster.workers_per_node=3 \
  --set cluster.aggregate_per_node=true \
  --set training.algorithm=sync --set training.batch_size=31 --set optimizer.learning_rate=0.04

python3 - "$WORK" <<'PY'
import csv, glob, re, sys
work = sys.argv[1]
def last(run, i):
    return list(csv.DictReader(open(f"{work}/{run}/metrics/worker-{i}.csv")))[-1]
sent = {run: [float(last(run, i)["bytes_sent"]) for i in range(4)] for run in ("per-worker", "downpour")}
print("bytes pushed per worker:", sent)
assert sent["downpour"][1] == sent["downpour"][3] == 0, "members push nothing to the servers"
assert sum(sent["downpour"]) * 2 == sum(sent["per-worker"]), "a node pushes half the bytes"
# The servers' clients are the nodes: ledger rows for clients 0 and 1 only, each applied as
# often as its pusher (worker 0, worker 2) pushed.
pushes = {}
for w in (0, 2):
    log = open(f"{work}/downpour/logs/worker-{w}.log").read()
    pushes[w // 2] = int(re.findall(r"worker \d+ done: \d+ steps, \d+ samples, (\d+) pushes", log)[-1])
clients = set()
for path in glob.glob(f"{work}/downpour/metrics/ledger-server-*.csv"):
    for r in csv.DictReader(open(path)):
        clients.add(int(r["worker"]))
        assert int(float(r["applied"])) == pushes[int(r["worker"])], (r, pushes)
assert clients == {0, 1}, clients
steps = [int(float(last("uneven", i)["step"])) for i in range(3)]
print("uneven: steps per worker", steps)
assert steps == [860, 860, 880], steps
PY
expect_eq "nodes: members push nothing, the servers see the nodes, half the bytes, every step" \
  "$?" "0"
grep -q "worker 1 pushes through worker 0 with the 2 workers of node 0" \
  "$WORK/downpour/logs/worker-1.log" && pass "a member's log names its node and pusher" \
  || fail "no node line in worker-1's log"

# Faults: kill -9 a member of node 0 and the pusher of node 1 while the job trains.
pace 5
run="$WORK/killed"
timeout 240 "$MONSOON" run configs/linear_regression.yaml --run-dir "$run" "${nodes[@]}" \
  "${paced[@]}" --set reliability.peer_timeout_seconds=3 >"$run.txt" 2>&1 &
launcher=$!
wait_for_file "$run/metrics/worker-3.csv" && sleep 1
pkill -9 -f "monsoon worker --run-dir $run --index 1 " || true
pkill -9 -f "monsoon worker --run-dir $run --index 2 " || true
wait "$launcher"
expect_eq "killed: the job carries on and exits 0" "$?" "0"
grep -q "worker-3 ended with its node (worker-2, which pushed for it, was lost)" "$run.txt" &&
  grep -q "worker 1 of node 0 was lost" "$run/logs/worker-0.log" &&
  pass "killed: node 0 pushed without its member; node 1 ended with its pusher" ||
  { fail "killed: the losses were not reported"; tail -5 "$run.txt"; }

# Resumed: a job stopped mid-run continues from the servers' checkpoints, each member at its
# pusher's position, and every worker ends at the job's last step.
run="$WORK/resumed"
timeout 240 "$MONSOON" run configs/linear_regression.yaml --run-dir "$run" "${nodes[@]}" \
  "${paced[@]}" >"$run.txt" 2>&1 &
launcher=$!
wait_for_file "$run/metrics/worker-3.csv" && sleep 1
kill -TERM "$launcher"
wait "$launcher"
expect_eq "resumed: the stopped job exits 130" "$?" "130"
timeout 240 "$MONSOON" run --resume "$run" >>"$run.txt" 2>&1
expect_eq "resumed: exit status" "$?" "0"
fits_line "$run" 0.02 && pass "resumed: m and b within 0.02" || fail "resumed: the fit"
grep -q "worker 1 resumes after push" "$run/logs/worker-1.log" &&
  [ "$(tail -qn1 "$run"/metrics/worker-[0-3].csv | cut -d, -f1 | sort -u)" = 800 ] &&
  pass "resumed: members resume with their pushers; every worker ends at step 800" ||
  fail "resumed: $(tail -qn1 "$run"/metrics/worker-[0-3].csv | cut -d, -f1 | xargs)"

# Refused: the elastic algorithms, a quorum of more nodes than there are.
"$MONSOON" validate configs/linear_regression.yaml "${nodes[@]}" \
  --set training.algorithm=easgd >"$WORK/easgd.txt" 2>&1
expect_eq "easgd with nodes: refused" "$?" "2"
grep -q "cluster.aggregate_per_node: the workers of easgd each train a copy" "$WORK/easgd.txt" &&
  pass "the refusal names the field and why" || fail "$(cat "$WORK/easgd.txt")"
"$MONSOON" validate configs/linear_regression.yaml "${nodes[@]}" \
  --set training.algorithm=sync --set sync.quorum=3 >"$WORK/quorum.txt" 2>&1
expect_eq "a quorum of 3 of 2 nodes: refused" "$?" "2"
grep -q "sync.quorum" "$WORK/quorum.txt" && pass "the refusal names sync.quorum" ||
  fail "$(cat "$WORK/quorum.txt")"
finish
