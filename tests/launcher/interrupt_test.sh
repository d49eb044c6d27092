#!/usr/bin/env bash
# Ctrl-C (SIGINT) stops every role quickly and `monsoon run` exits 130; the servers checkpoint
# on the way out and `monsoon run --resume` finishes the job.
source tests/launcher/test_lib.sh

"$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/int" >"$WORK/out.txt" 2>&1 &
launcher=$!
for _ in $(seq 1 100); do
  [ -s "$WORK/int/metrics/worker-0.csv" ] && [ "$(wc -l <"$WORK/int/metrics/worker-0.csv")" -gt 2 ] && break
  sleep 0.2
done
start=$(date +%s.%N)
kill -INT "$launcher"
timeout 20 tail --pid="$launcher" -f /dev/null
wait "$launcher"
code=$?
elapsed=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
echo "stopped in ${elapsed}s"
expect_eq "exit status after SIGINT" "$code" "130"
grep -q "interrupted: all roles stopped" "$WORK/out.txt" && pass "interrupt message" \
  || fail "interrupt message: $(tail -2 "$WORK/out.txt")"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)" "$elapsed" \
  && pass "stopped within 10 s" || fail "took ${elapsed}s to stop"
leftover=$(pgrep -f -- "--run-dir $WORK/int" || true)
expect_eq "no role left running" "$leftover" ""
for j in 0 1; do
  ls "$WORK"/int/checkpoints/server-$j/ckpt-*.bin >/dev/null 2>&1 \
    && pass "server $j wrote a checkpoint on the way out" || fail "server $j has no checkpoint"
done
# ... from which the run continues.
timeout 240 "$MONSOON" run --resume "$WORK/int" >"$WORK/resume.txt" 2>&1
expect_eq "run --resume after the interrupt" "$?" "0"
grep -q "resumed from" "$WORK"/int/logs/server-0.log && pass "resumed from the checkpoint" \
  || fail "did not resume: $(tail -3 "$WORK/resume.txt")"
# The restarted workers carried on their totals: in each worker's metrics the clock and the
# byte counters never go back across the restart, the last rows cover both processes, and the
# summary's training time is the longest worker's from those rows. The evaluator's clock
# carries on too.
python3 - "$WORK/int" <<'PY'
import csv, json, sys
run = sys.argv[1]
summary = json.load(open(f"{run}/summary.json"))
longest = 0.0
for i in (0, 1):
    rows = list(csv.DictReader(open(f"{run}/metrics/worker-{i}.csv")))
    for column in ("wall_seconds", "bytes_sent", "bytes_received", "comm_seconds"):
        values = [float(r[column]) for r in rows]
        assert all(a <= b for a, b in zip(values, values[1:])), (i, column)
    last = rows[-1]
    samples = float(last["samples_per_second"]) * float(last["wall_seconds"])
    assert samples >= 30000 * 12 - 1, (i, samples)  # its half of the 60k images, 12 epochs
    longest = max(longest, float(last["wall_seconds"]))
evaluations = [float(r["wall_seconds"]) for r in csv.DictReader(open(f"{run}/metrics/evaluator.csv"))]
assert all(a <= b for a, b in zip(evaluations, evaluations[1:])), evaluations
# summary.json prints 10 significant digits.
assert abs(summary["training_seconds"] - longest) <= 1e-9 * longest, (summary, longest)
print("worker totals carried across the restart; training_seconds", summary["training_seconds"],
      "; evaluator clock", evaluations)
PY
expect_eq "metrics carried on across the restart" "$?" "0"
# A stop while the roles are still starting (0.1-1 s after the launcher made its run directory,
# so after it took over the stop signals): each role reports the stop, never the failure it
# runs into afterwards (a worker's Hello to a server that has already shut down on the same
# signal used to end it with that error, exit status 1).
reported=0
for delay in 0.1 0.3 0.5 0.7 1.0; do
  "$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/early-$delay" >/dev/null 2>&1 &
  launcher=$!
  for _ in $(seq 200); do [ -d "$WORK/early-$delay" ] && break; sleep 0.01; done
  sleep "$delay"
  kill -TERM "$launcher"
  wait "$launcher"
  expect_eq "SIGTERM ${delay}s in: exit status" "$?" "130"
  for log in "$WORK/early-$delay"/logs/*.log; do
    last=$(grep -h "^monsoon:" "$log" | tail -1)
    if [ -n "$last" ] && ! echo "$last" | grep -q "stopped by signal"; then
      fail "SIGTERM ${delay}s in: $(basename "$log") ended with: $last"
      reported=1
    fi
  done
done
[ "$reported" = 0 ] && pass "every role stopped while starting reported the stop"
finish
