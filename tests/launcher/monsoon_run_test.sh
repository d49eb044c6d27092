#!/usr/bin/env bash
# `monsoon run` end to end with real processes: the linear-regression job recovers m and b,
# writes a complete run directory, and refuses to overwrite it.
source tests/launcher/test_lib.sh

RUN="$WORK/linear"
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$RUN" >"$WORK/out.txt" 2>&1
expect_eq "linear job exit status" "$?" "0"
tail -3 "$WORK/out.txt"

for f in config.yaml token summary.json params.bin metrics/worker-0.csv metrics/worker-1.csv \
         metrics/server-0.csv metrics/evaluator.csv logs/server-0.log logs/worker-1.log \
         logs/evaluator.log rendezvous/server-0; do
  if [ -s "$RUN/$f" ]; then pass "run dir has $f"; else fail "run dir lacks $f"; fi
done
expect_eq "token mode" "$(stat -c %a "$RUN/token")" "600"
# The progress line a SLURM output file gets (status --follow): it ends once training has.
follow=$(timeout 20 "$MONSOON" status --run-dir "$RUN" --follow 1 2>&1)
expect_eq "status --follow exit status" "$?" "0"
echo "$follow" | grep -q "^monsoon: \[ *[0-9]*s\] epoch 20.00/20 | .* | test loss " \
  && pass "status --follow: $follow" || fail "status --follow printed: $follow"

fits_line "$RUN" && pass "summary: m and b within 0.01 of the line" || fail "summary: the fit"
python3 - "$RUN/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["algorithm"] == "downpour"
assert s["final_test_accuracy"] is None          # regression: no accuracy
assert s["final_test_loss"] < 0.01, s["final_test_loss"]
assert s["epochs"] == 20 and s["samples_per_second"] > 0 and s["wall_seconds"] > 0
assert s["params_file"].endswith("params.bin") and s["params_from"] == "evaluator"
PY
expect_eq "summary: the other fields" "$?" "0"

# trace.json: every role's events for chrome://tracing; each worker's first 200 steps (the
# default trace.steps), pull, compute and push one after the other on its loop's thread.
python3 - "$RUN" <<'PY'
import collections, json, sys
run = sys.argv[1]
summary = json.load(open(f"{run}/summary.json"))
events = json.load(open(f"{run}/trace.json"))["traceEvents"]
assert summary["trace_file"].endswith("/trace.json") and summary["trace_events"] == len(events)
names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
assert sorted(names.values()) == ["evaluator", "server 0", "worker 0", "worker 1"], names
spans = collections.defaultdict(list)
for e in events:
    if e["ph"] == "X":
        assert e["dur"] >= 0, e
        spans[names[e["pid"]], e["tid"]].append(e)
for w in ("worker 0", "worker 1"):
    loop = sorted(spans[w, 0], key=lambda e: e["ts"])
    kinds = collections.Counter(e["name"] for e in loop)
    assert kinds["load data"] == 1 and kinds["connect"] == 1, kinds
    steps = [e["args"]["step"] for e in loop if e["name"] == "compute"]
    assert steps == list(range(200)), steps[:5]
    assert kinds["pull"] + kinds["push+pull"] >= 200, kinds  # pull_with_push: one round trip a step
    for a, b in zip(loop, loop[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 1, (a, b)  # one thing at a time
print("trace:", len(events), "events;", {k: len(v) for k, v in spans.items()})
assert any(e["name"] == "checkpoint" for e in spans["server 0", 0])
assert all("test_loss" in e["args"] for e in spans["evaluator", 0] if e["name"] == "score test set")
assert any(e["name"] == "score test set" for e in spans["evaluator", 0])
PY
expect_eq "trace.json: every role, each worker's first 200 steps in order" "$?" "0"

# The resolved config has every default and parses again; so does what validate prints, whose
# model table is a YAML comment.
timeout 20 "$MONSOON" validate "$RUN/config.yaml" >"$WORK/validated.yaml"
expect_eq "resolved config validates" "$?" "0"
grep -q "^#   total  *2$" "$WORK/validated.yaml" && pass "validate shows the model: 2 parameters" \
  || fail "no model table: $(tail -4 "$WORK/validated.yaml")"
timeout 20 "$MONSOON" validate "$WORK/validated.yaml" >/dev/null
expect_eq "validate's own output validates" "$?" "0"

# Same run directory again: refused, nothing overwritten.
before=$(md5sum "$RUN/summary.json")
timeout 20 "$MONSOON" run configs/linear_regression.yaml --run-dir "$RUN" 2>"$WORK/err.txt"
expect_eq "reusing a run directory exits 2" "$?" "2"
grep -q "already holds a run" "$WORK/err.txt" && pass "reuse message" || fail "reuse message: $(cat "$WORK/err.txt")"
expect_eq "summary untouched" "$(md5sum "$RUN/summary.json")" "$before"

# A directory that holds anything but a run is refused, and nothing in it is touched.
mkdir -p "$WORK/foreign" && echo "mine" >"$WORK/foreign/summary.json"
timeout 20 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/foreign" 2>"$WORK/err.txt"
expect_eq "a foreign directory: exit status" "$?" "2"
grep -q "is not empty (summary.json) and holds no Monsoon run" "$WORK/err.txt" \
  && pass "foreign directory refused" || fail "foreign directory: $(cat "$WORK/err.txt")"
expect_eq "its file untouched" "$(cat "$WORK/foreign/summary.json")" "mine"

# Two runs of one run directory at once: one runs, the other is refused while it does.
pace 2
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/twice" "${paced[@]}" \
  >/dev/null 2>&1 &
first=$!
for _ in $(seq 100); do [ -s "$WORK/twice/config.yaml" ] && break; sleep 0.1; done
timeout 20 "$MONSOON" run --resume "$WORK/twice" 2>"$WORK/err.txt"
expect_eq "a resume of a running run: exit status" "$?" "2"
grep -q "is in use by another monsoon process" "$WORK/err.txt" \
  && pass "second process refused: $(cat "$WORK/err.txt")" || fail "second: $(cat "$WORK/err.txt")"
wait "$first"
expect_eq "the first run finished" "$?" "0"

# Default run directories started in the same second are two directories.
mkdir -p "$WORK/defaults" && cp -r configs/linear_regression.yaml configs/data "$WORK/defaults/"
(cd "$WORK/defaults" && for i in 1 2; do
   timeout 120 "$MONSOON" run linear_regression.yaml --set training.epochs=2 >/dev/null 2>&1 &
 done; wait)
expect_eq "two default run directories" "$(ls "$WORK/defaults/runs/linear_regression" | wc -l)" "2"

# --set reaches the job (one epoch, one worker, no trace).
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/short" \
  --set training.epochs=1 --set cluster.workers=1 --set trace.steps=0 >/dev/null 2>&1
expect_eq "--set run exit status" "$?" "0"
expect_eq "--set epochs" "$(json_get "$WORK/short/summary.json" epochs)" "1.0"
expect_eq "--set workers" "$(json_get "$WORK/short/summary.json" workers)" "1"
expect_eq "--set trace.steps=0: no trace" \
  "$(json_get "$WORK/short/summary.json" trace_file) $(ls "$WORK/short/trace" | wc -l)" "None 0"
# A run whose training did not finish (out of time) gets no summary: summarize names the
# server that did not see the workers finish.
timeout 60 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/unfinished" \
  --set training.epochs=1000 --set training.timeout_seconds=1 >/dev/null 2>&1
expect_eq "job out of time exits" "$?" "1"
timeout 60 "$MONSOON" summarize --run-dir "$WORK/unfinished" >/dev/null 2>"$WORK/unfinished.txt"
expect_eq "summarize of an unfinished run exits" "$?" "1"
grep -q "training did not finish: server 0 last saw 0 of 2 workers finished and 0 lost" \
  "$WORK/unfinished.txt" && pass "summarize: $(head -c 110 "$WORK/unfinished.txt")" \
  || fail "summarize of an unfinished run: $(cat "$WORK/unfinished.txt")"
[ ! -e "$WORK/unfinished/summary.json" ] && pass "no summary.json" || fail "summary.json written"
# `monsoon status`: finished (exit 0), not finished (exit 1, naming the server), and running
# (its server answers a Stats call with this job's token).
"$MONSOON" status --run-dir "$RUN" >"$WORK/status.txt"
expect_eq "status of the finished run exits" "$?" "0"
grep -q "^training finished$" "$WORK/status.txt" &&
  grep -q "^summary: $RUN/summary.json$" "$WORK/status.txt" &&
  pass "status: $(head -1 "$WORK/status.txt")" || fail "$(cat "$WORK/status.txt")"
"$MONSOON" status --run-dir "$WORK/unfinished" >"$WORK/status.txt"
expect_eq "status of the unfinished run exits" "$?" "1"
grep -q "^training did not finish: server 0 last saw 0 of 2 workers finished" "$WORK/status.txt" \
  && grep -q "^no summary yet$" "$WORK/status.txt" && pass "status: not finished, no summary" \
  || fail "$(cat "$WORK/status.txt")"
pace 20
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/running" "${paced[@]}" \
  >/dev/null 2>&1 &
job=$!
for _ in $(seq 100); do
  [ "$(rows "$WORK/running/metrics/server-0.csv")" -ge 2 ] && break
  sleep 0.1
done
"$MONSOON" status --run-dir "$WORK/running" >"$WORK/status.txt"
expect_eq "status of a running job exits" "$?" "1"
grep -q "^training running (server 0 at 127.0.0.1:[0-9]*: [0-9] of 2 workers finished, 0 lost, \
[0-9]* pushes applied)$" "$WORK/status.txt" \
  && pass "status: $(sed -n 2p "$WORK/status.txt")" || fail "running job: $(cat "$WORK/status.txt")"
# A published address that another job's server now holds (a reused port) is not this job's
# server: it refuses the token, so the unfinished run does not read as running.
cp "$WORK/running/rendezvous/server-0" "$WORK/unfinished/rendezvous/server-0"
"$MONSOON" status --run-dir "$WORK/unfinished" >"$WORK/status.txt"
expect_eq "status with another job's server at the address exits" "$?" "1"
grep -q "^training did not finish: .*(no server is running; " "$WORK/status.txt" \
  && pass "status: another job's server on the address is not this job's" \
  || fail "reused address: $(cat "$WORK/status.txt")"
kill -TERM "$job"
wait "$job"
"$MONSOON" status --run-dir "$WORK/running" >"$WORK/status.txt"
grep -q "^training did not finish: .*(no server is running; they last wrote metrics [0-9]* s ago)" \
  "$WORK/status.txt" && pass "status of the stopped job: no server is running" \
  || fail "stopped job: $(cat "$WORK/status.txt")"
# Two jobs at once on one machine: ephemeral ports and per-job tokens, so no clash.
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/twin_a" >/dev/null 2>&1 &
a=$!
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/twin_b" >/dev/null 2>&1 &
b=$!
wait "$a"
expect_eq "concurrent job A" "$?" "0"
wait "$b"
expect_eq "concurrent job B" "$?" "0"
[ "$(cat "$WORK/twin_a/rendezvous/server-0")" != "$(cat "$WORK/twin_b/rendezvous/server-0")" ] \
  && pass "the two jobs' servers listen on different ports" || fail "same server address"
[ "$(cat "$WORK/twin_a/token")" != "$(cat "$WORK/twin_b/token")" ] \
  && pass "the two jobs have different tokens" || fail "same token"

# Without an evaluator, the final weights come from the servers' final checkpoints (2 servers:
# one parameter each); with one, they equal the evaluator's params.bin to the bit, and scored
# by `summarize` they give the evaluator's final test loss and global step.
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/no_eval" \
  --set cluster.evaluator=false --set cluster.servers=2 >/dev/null 2>&1
expect_eq "job without an evaluator" "$?" "0"
expect_eq "params_from" "$(json_get "$WORK/no_eval/summary.json" params_from)" "server checkpoints"
# The job has a test set: its final weights are scored though no evaluator ran.
python3 -c "import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))['final_test_loss'] < 0.01 else 1)" \
  "$WORK/no_eval/summary.json" && pass "no evaluator: the final weights are scored" \
  || fail "no evaluator: final_test_loss $(json_get "$WORK/no_eval/summary.json" final_test_loss)"
fits_line "$WORK/no_eval" && pass "its weights fit the line" || fail "its weights do not fit the line"
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/two_servers" \
  --set cluster.servers=2 >/dev/null 2>&1
mv "$WORK/two_servers/params.bin" "$WORK/evaluator_params.bin"
mv "$WORK/two_servers/summary.json" "$WORK/evaluator_summary.json"
timeout 60 "$MONSOON" summarize --run-dir "$WORK/two_servers" >/dev/null 2>&1
expect_eq "summarize without params.bin" "$?" "0"
cmp -s "$WORK/two_servers/params.bin" "$WORK/evaluator_params.bin" \
  && pass "weights from the checkpoints == the evaluator's final weights" \
  || fail "weights from the checkpoints differ from the evaluator's"
# The evaluator's loss comes through evaluator.csv, which keeps 15 significant digits.
for field in final_test_loss global_step; do
  python3 -c "import json, math, sys
a, b = (json.load(open(f))[sys.argv[3]] for f in sys.argv[1:3])
sys.exit(0 if math.isclose(a, b, rel_tol=1e-12) else 1)" \
    "$WORK/two_servers/summary.json" "$WORK/evaluator_summary.json" "$field" \
    && pass "summarize scored the checkpointed weights: $field" \
    || fail "summarize scored the checkpointed weights: $field: $(json_get "$WORK/two_servers/summary.json" $field) vs $(json_get "$WORK/evaluator_summary.json" $field)"
done

# A server that dies after its final checkpoint but before its final metrics row leaves a run
# that reads as unfinished (the state is made by hand: the finished run without that row, the
# summary or params.bin). --resume finishes it from the checkpoints without training more:
# the same final weights, to the bit.
cp -a "$RUN" "$WORK/crash_after_checkpoint"
crashed="$WORK/crash_after_checkpoint"
sed -i '$d' "$crashed/metrics/server-0.csv"
rm "$crashed/summary.json" "$crashed/params.bin"
"$MONSOON" status --run-dir "$crashed" >/dev/null
expect_eq "status without the final server row exits" "$?" "1"
timeout 60 "$MONSOON" run --resume "$crashed" >"$WORK/crash.txt" 2>&1
expect_eq "resume after a crash past the final checkpoint exits" "$?" "0"
grep -q "resumed from" "$crashed/logs/server-0.log" && pass "the server resumed from its checkpoint" \
  || fail "no resume: $(tail -3 "$WORK/crash.txt")"
cmp -s "$crashed/params.bin" "$RUN/params.bin" \
  && pass "resumed run's final weights == the finished run's" \
  || fail "the resumed run's final weights differ from the finished run's"
expect_eq "resumed run's global step" "$(json_get "$crashed/summary.json" global_step)" \
  "$(json_get "$RUN/summary.json" global_step)"

# `monsoon launch` outside any parallel launcher runs the whole job here, as `run` does.
env -u SLURM_JOB_ID -u SLURM_STEP_ID timeout 120 "$MONSOON" launch configs/linear_regression.yaml \
  --run-dir "$WORK/launch_local" --set training.epochs=2 >/dev/null 2>&1
expect_eq "launch in plain local mode" "$?" "0"
expect_eq "launch: summary written" "$(json_get "$WORK/launch_local/summary.json" epochs)" "2.0"

# A job that collapses (a learning rate 250 times the default's) exits 0 with a warning
# (fmnist_job_test: the default job does not warn). Synchronous, so that it always ends at
# chance level: asynchronous workers may instead overflow to a NaN gradient (below).
timeout 120 "$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/collapsed" \
  --set training.epochs=1 --set training.algorithm=sync --set optimizer.learning_rate=5 \
  --set training.learning_rate_schedule=constant >"$WORK/collapsed.txt" 2>&1
expect_eq "collapsed job exits" "$?" "0"
grep -q "monsoon: warning: training ended at chance level: test accuracy 0.1" \
  "$WORK/collapsed.txt" && pass "collapse warned: $(grep -o 'test accuracy [0-9.]* for 10 classes' "$WORK/collapsed.txt")" \
  || fail "no collapse warning: $(tail -2 "$WORK/collapsed.txt")"

# A job whose weights overflow: the worker refuses its NaN gradient (nothing of it is pushed),
# names the likely causes, and the job fails. No evaluator: it could see the test loss turn
# infinite first (and says so, in words of its own).
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/diverged" \
  --set optimizer.learning_rate=1000 --set cluster.evaluator=false >"$WORK/diverged.txt" 2>&1
expect_eq "diverged job exits" "$?" "1"
grep -q "^monsoon: worker-[01] failed: .*the gradient is not finite at element [0-9]* (.*); nothing was pushed: training diverged (lower optimizer.learning_rate.*, after [0-9]* steps" \
       "$WORK/diverged.txt" \
  && pass "divergence named: $(grep -m1 -o 'the gradient is not finite.*' "$WORK/diverged.txt")" \
  || fail "divergence not named: $(tail -3 "$WORK/diverged.txt")"

# OpenBLAS's kernels: on a CPU with AVX2, kernels built on it (Monsoon sets OPENBLAS_CORETYPE
# where OpenBLAS does not know the CPU), unless OPENBLAS_CORETYPE chooses.
kernels=$("$MONSOON" devices 2>&1 | sed -n 's/^cpu: OpenBLAS \(.*\) kernels$/\1/p')
if grep -qw avx2 /proc/cpuinfo; then
  case "$kernels" in
    Haswell | Zen | Excavator | SkylakeX | Cooperlake | SapphireRapids) pass "BLAS kernels: $kernels" ;;
    *) fail "an AVX2 CPU runs OpenBLAS's '$kernels' kernels" ;;
  esac
fi
# Restarted with them (and huge pages), the launcher keeps its name for ps and top.
timeout 60 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/named" >/dev/null 2>&1 &
waiting=$!
sleep 1
expect_eq "the restarted launcher's process name" "$(cat "/proc/$(pgrep -P "$waiting")/comm")" "monsoon"
wait "$waiting"
expect_eq "a chosen OPENBLAS_CORETYPE stands" \
  "$(OPENBLAS_CORETYPE=Prescott "$MONSOON" devices 2>&1 | tail -1)" "cpu: OpenBLAS Prescott kernels"
finish
