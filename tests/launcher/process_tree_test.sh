#!/usr/bin/env bash
# A role is its whole process tree (README "Reliability and security"): a worker program
# started through a wrapper script, with or without `exec`, or through nested wrappers,
# finishes its job (its exit record is its role's, written by the wrapper's child); a stop
# inside a wrapper is a stop (restarted), not the program's own failure; and the helpers a
# worker starts (a child, setsid, nohup, an emptied environment) are ended with their role and
# their job: afterwards no process of the job is left.
source tests/launcher/test_lib.sh

program="$PWD/tests/launcher/tree_worker.py"
cat >"$WORK/plain.sh" <<'SH'
export WRAPPED=plain
/usr/bin/python3 "$@"
SH
cat >"$WORK/exec.sh" <<'SH'
export WRAPPED=exec
exec /usr/bin/python3 "$@"
SH
cat >"$WORK/nested.sh" <<SH
bash "$WORK/plain.sh" "\$@"
echo "the inner wrapper ended"
SH

# job_config NAME PROGRAM...: a short straight-line fit (configs/linear_regression.yaml) whose
# workers and evaluator run PROGRAM.
job_config() {
  local name=$1
  shift
  local args
  args=$(printf '"%s", ' "$@")
  sed -e "s|  evaluator: true|  evaluator: true\n  worker_program: [${args%, }]|" \
    -e "s|  type: linear_regression|  type: program\n  loss: mean_squared_error|" -e "s|data/|$PWD/configs/data/|" \
    -e "s|  epochs: 20|  epochs: 2|" configs/linear_regression.yaml >"$WORK/$name.yaml"
}

# left_of RUN: the processes still alive that belong to RUN: by their environment or command
# line (helpers' sleeps are named by $HELPER_TAG, unique to this test process).
left_of() {
  local p
  for p in $(pgrep -f "^sleep $HELPER_TAG[1-4]\$" || true); do echo "$p: $(tr '\0' ' ' <"/proc/$p/cmdline")"; done
  for p in /proc/[0-9]*; do
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "MONSOON_RUN_DIR=$1" && echo "${p#/proc/}"
  done
}

n=0
for wrapper in none exec plain nested; do
  n=$((n + 1))
  export HELPER_TAG="77$$0$n"
  case $wrapper in
    none) job_config "$wrapper" /usr/bin/python3 "$program" ;;
    *) job_config "$wrapper" bash "$WORK/$wrapper.sh" "$program" ;;
  esac
  run="$WORK/run-$wrapper"
  timeout 120 "$MONSOON" run "$WORK/$wrapper.yaml" --run-dir "$run" >"$run.txt" 2>&1
  expect_eq "wrapper $wrapper: job exit status" "$?" "0"
  grep -q "monsoon: done" "$run.txt" || { fail "wrapper $wrapper: not done"; tail -5 "$run.txt"; }
  [ "$wrapper" != nested ] || grep -q "the inner wrapper ended" "$run/logs/worker-0.log" \
    && pass "wrapper $wrapper: the role ended with its wrapper" || fail "wrapper $wrapper: log"
  expect_eq "wrapper $wrapper: every helper ended, no process of the job left" "$(left_of "$run")" ""
done

# A stop inside a wrapper without exec: the program records the stop, the wrapper exits with
# its status, and the launcher restarts the worker; the stopped incarnation's helpers end
# with it. Worker 0 holds its fourth step until the stop has been sent (STEP_GATE), so the
# stop lands mid-training however slow the machine.
export HELPER_TAG="77$$90"
run="$WORK/stopped"
STEP_GATE="$WORK/stop-sent" timeout 120 "$MONSOON" run "$WORK/plain.yaml" --run-dir "$run" \
  --set reliability.worker_restarts=1 >"$run.txt" 2>&1 &
launcher=$!
# Its three steps before the gate: run_role (which takes stop signals) is under way.
for _ in $(seq 600); do [ "$(rows "$run/metrics/worker-0.csv")" -ge 3 ] && break; sleep 0.1; done
first_helper=""
for _ in $(seq 100); do
  for p in $(pgrep -f "^sleep ${HELPER_TAG}1\$" || true); do
    { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "MONSOON_INDEX=0" && first_helper=$p
  done
  [ -n "$first_helper" ] && break
  sleep 0.1
done
stopped=""
for p in $(pgrep -f "python3 $program" || true); do
  environ=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null)
  grep -qx "MONSOON_RUN_DIR=$run" <<<"$environ" && grep -qx "MONSOON_INDEX=0" <<<"$environ" &&
    grep -qx "MONSOON_ROLE=worker" <<<"$environ" && kill -TERM "$p" && stopped+=" $p"
done
touch "$WORK/stop-sent"
[ -n "$stopped" ] && pass "worker 0's program found and stopped" || fail "worker 0's program not found"
for _ in $(seq 100); do kill -0 "$first_helper" 2>/dev/null || break; sleep 0.1; done
[ -n "$first_helper" ] && ! kill -0 "$first_helper" 2>/dev/null \
  && pass "the stopped worker's helper ended with it" || fail "helper '$first_helper' outlived its role"
wait "$launcher"
expect_eq "a stop inside a wrapper: job exit status" "$?" "0"
grep -q "worker-0 was stopped by a signal; restarting it" "$run.txt" \
  && pass "a stop inside a wrapper is a stop: restarted" || { fail "not restarted"; cat "$run.txt"; }
expect_eq "after the restarted job, no process of it left" "$(left_of "$run")" ""
finish
