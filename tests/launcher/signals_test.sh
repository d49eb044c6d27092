#!/usr/bin/env bash
# Signals, with real processes (README "Reliability and security"):
#   - a plain kill (SIGTERM) of a worker follows the restart rules: the worker is restarted
#     and the job finishes;
#   - a role's own crash (SIGABRT) is a failure: the job stops naming the crash, however many
#     restarts the config allows;
#   - the launcher killed by SIGHUP, SIGQUIT or SIGKILL: every role stops gracefully, each
#     server writes its final checkpoint, no role is left running, the run directory stays
#     locked until the last role has gone, and `monsoon run --resume` finishes the job;
#   - a server stopped for 13 s (SIGSTOP) declares nobody lost, and the job finishes;
#   - a closed output pipe (monsoon run ... | head -2) does not stop training.
source tests/launcher/test_lib.sh

config=configs/linear_regression.yaml
# At least 8 s of training on little CPU; only the final checkpoint is written.
pace 5
long=("${paced[@]}" --set checkpoint.interval_seconds=0)

# start_job RUN [ARGS...]: the job in the background, $job its launcher's pid, once worker 1
# has reported a few steps.
start_job() {
  local run=$1
  shift
  "$MONSOON" run "$config" --run-dir "$run" "${long[@]}" "$@" >"$run.txt" 2>&1 &
  job=$!
  for _ in $(seq 100); do
    [ "$(rows "$run/metrics/worker-1.csv")" -gt 3 ] && return 0
    sleep 0.1
  done
  fail "$run: worker 1 reported nothing in 10 s"
}

# roles_of RUN: the pids of RUN's role processes.
roles_of() { pgrep -f -- "monsoon (server|worker|evaluator) --run-dir $1( |$)" || true; }

# A plain kill of a worker, with a restart allowed: restarted, and the job finishes.
run="$WORK/worker-term"
start_job "$run" --set reliability.worker_restarts=1
pkill -TERM -f "monsoon worker --run-dir $run --index 1"
wait "$job"
expect_eq "job whose worker 1 got SIGTERM exits" "$?" "0"
grep -q "worker-1 was stopped by a signal; restarting it" "$run.txt" \
  && pass "the SIGTERM'd worker was restarted" || fail "$(tail -3 "$run.txt")"
fits_line "$run" && pass "the job still fit the line" || fail "the job did not fit the line"

# A worker's own crash, with restarts allowed: the job stops and names the crash.
run="$WORK/worker-abort"
start_job "$run" --set reliability.worker_restarts=3
pkill -ABRT -f "monsoon worker --run-dir $run --index 1"
wait "$job"
expect_eq "job whose worker 1 crashed exits" "$?" "1"
grep -q "worker-1 crashed with signal 6 (Aborted), after [0-9]* steps; the job was stopped" "$run.txt" \
  && pass "the crash stopped the job, not restarted" || fail "$(tail -3 "$run.txt")"
expect_eq "no role left after the crash" "$(roles_of "$run")" ""

# kill_launcher SIGNAL RUN: starts the job, sends SIGNAL to its launcher, and waits until its
# roles have gone (at most 70 s: their stop deadline). Checks the lock on the way.
kill_launcher() {
  local signal=$1 run=$2 held=0
  start_job "$run"
  kill "-$signal" "$job"
  wait "$job"
  launcher_status=$?
  for _ in $(seq 700); do
    if flock -n "$run/lock" true; then
      # The lock is free: no role of the run may be left.
      [ -z "$(roles_of "$run")" ] || fail "SIG$signal: $run unlocked while its roles still run"
      break
    fi
    held=$((held + 1))
    sleep 0.1
  done
  expect_eq "SIG$signal: no role left running" "$(roles_of "$run")" ""
  echo "SIG$signal: the run directory stayed locked for ${held} tenth(s) of a second after the launcher ended"
  for log in "$run"/logs/server-*.log; do
    grep -q "checkpoint .*ckpt-" "$log" && pass "SIG$signal: $(basename "$log" .log) wrote its final checkpoint" \
      || fail "SIG$signal: no final checkpoint in $log"
  done
  timeout 120 "$MONSOON" run --resume "$run" >"$run.resume.txt" 2>&1
  expect_eq "SIG$signal: monsoon run --resume exits" "$?" "0"
  grep -q "resumed from" "$run"/logs/server-0.log && pass "SIG$signal: resumed from the checkpoint" \
    || fail "SIG$signal: did not resume: $(tail -3 "$run.resume.txt")"
  fits_line "$run" && pass "SIG$signal: the resumed job fit the line" || fail "SIG$signal: no fit"
}

for signal in HUP QUIT; do
  kill_launcher "$signal" "$WORK/launcher-$signal"
  expect_eq "launcher's exit status after SIG$signal" "$launcher_status" "130"
done
kill_launcher KILL "$WORK/launcher-KILL"

# A server stopped for 13 s (SIGSTOP; a VM stall looks the same) wakes without blaming its
# peers for the silence it caused, and the job finishes with nobody lost.
run="$WORK/server-stall"
start_job "$run"
pkill -STOP -f "monsoon server --run-dir $run --index 0"
sleep 13
pkill -CONT -f "monsoon server --run-dir $run --index 0"
wait "$job"
expect_eq "job whose server was stopped 13 s exits" "$?" "0"
grep -q "this server did not run for 1[3-9]" "$run/logs/server-0.log" \
  && pass "the server noticed its own stall" || fail "no stall noticed"
grep "lost:" "$run/logs/server-0.log" && fail "the stalled server declared peers lost" \
  || pass "no peer declared lost after the stall"
expect_eq "summary.json workers_lost after the stall" "$(json_get "$run/summary.json" workers_lost)" "0"

# A closed output pipe: the launcher's writes fail, the training does not.
run="$WORK/pipe"
"$MONSOON" run "$config" --run-dir "$run" "${paced[@]}" 2>&1 | head -2 >"$run.head.txt"
expect_eq "monsoon run | head -2: the launcher's exit status" "${PIPESTATUS[0]}" "0"
[ -f "$run/summary.json" ] && pass "the job behind a closed pipe finished (summary.json)" \
  || fail "no summary.json behind a closed pipe"
finish
