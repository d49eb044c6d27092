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
finish
