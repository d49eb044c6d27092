#!/usr/bin/env bash
# Chaos: kill -9 a random worker (its payloads through shared memory, then again through
# gRPC), then a random server, at random moments of the default job
# (configs/fmnist_downpour.yaml). Asserts, each round:
#   - a killed worker is restarted, rejoins where the servers last heard from it, and the job
#     finishes (exit 0);
#   - a killed server stops the job within 20 s with an error naming it, and
#     `monsoon run --resume` finishes it from the servers' checkpoints;
#   - (once) with reliability.server_restarts, the launcher resumes such a job by itself;
#   - the final test accuracy is within 1 point of a fault-free run of the same job (two are
#     run: the job's cosine learning-rate schedule keeps fault-free runs within about 0.6 of a
#     point of each other; with a constant rate they spread by 1.4 and one resumed run in CI
#     ended 1.85 below both references);
#   - per the servers' ledgers, every push of every worker was applied to every chunk exactly
#     once (applied == the worker's pushes, sum of sequence numbers == n (n + 1) / 2).
# Also, once: a worker lost for good is carried on without and reported, so is a worker that
# never starts, and a killed evaluator is restarted.
# MONSOON_CHAOS_ROUNDS (default 1) sets the number of rounds; the scorecard lines at the end
# feed README "Reliability and security". Shortened (the default), every run of the default job
# trains 6 of its 12 epochs and the kills come 2-9 s in; the long form runs all 12, killing at
# 3-20 s.
source tests/launcher/test_lib.sh

rounds="${MONSOON_CHAOS_ROUNDS:-1}"
config=configs/fmnist_downpour.yaml
if long_form; then
  shortened=() first_kill=3 kill_window=18
else
  shortened=(--set training.epochs=6) first_kill=2 kill_window=8
fi
seed="${MONSOON_CHAOS_SEED:-$RANDOM}"
RANDOM=$seed
echo "chaos seed $seed, $rounds round(s)"

accuracy() { json_get "$1/summary.json" final_test_accuracy; }

# within_a_point ACCURACY REFERENCE...: within 0.01 of at least one reference.
within_a_point() {
  python3 -c "import sys; a = float(sys.argv[1]); sys.exit(0 if any(abs(a - float(r)) <= 0.01 for r in sys.argv[2:]) else 1)" "$@"
}

references=()
for k in 1 2; do
  timeout 240 "$MONSOON" run "$config" --run-dir "$WORK/reference-$k" "${shortened[@]}" \
    >"$WORK/reference-$k.txt" 2>&1
  expect_eq "fault-free run $k exit status" "$?" "0"
  references+=("$(accuracy "$WORK/reference-$k")")
done
reference="${references[*]}"
echo "fault-free accuracy $reference"

# run_and_kill RUN ROLE [--set ...]: runs the job and kill -9s ROLE (worker or server) number
# $victim (random) after $delay seconds (random, in the kill window); sets $status (the launcher's exit
# status) and $stopped_in (seconds from the kill to the launcher's exit).
run_and_kill() {
  local run=$1 role=$2
  shift 2
  victim=$((RANDOM % 2))
  delay=$((first_kill + RANDOM % kill_window))
  timeout 240 "$MONSOON" run "$config" --run-dir "$run" "${shortened[@]}" "$@" >"$run.txt" 2>&1 &
  local job=$!
  sleep "$delay"
  pkill -9 -f "monsoon $role --run-dir $run --index $victim" || true
  local killed_at
  killed_at=$(date +%s.%N)
  wait "$job"
  status=$?
  stopped_in=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$killed_at")
}

# check_outcome ROUND RUN: accuracy within a point of a fault-free run, every push applied once.
check_outcome() {
  local acc
  acc=$(accuracy "$2")
  within_a_point "$acc" "${references[@]}" \
    && pass "round $1: accuracy $acc within a point of a fault-free run ($reference)" \
    || fail "round $1: accuracy $acc not within a point of either fault-free run ($reference)"
  check_ledger "$2" && pass "round $1: every push applied exactly once" || fail "round $1: ledger"
}

# expect_resumed RUN LABEL: RUN's servers resumed from their checkpoints.
expect_resumed() {
  grep -q "resumed from" "$1"/logs/server-*.log \
    && pass "$2: servers resumed from their checkpoints" \
    || fail "$2: no server resumed from a checkpoint"
}

# ended_before_kill LABEL: the job finished before the kill came, so it must have exited 0.
ended_before_kill() {
  echo "$1: the job ended before the kill (exit $status)"
  expect_eq "$1: job exit status" "$status" "0"
}

survived=0
worst=0
for round in $(seq 1 "$rounds"); do
  # A worker, killed and restarted: its payloads through shared memory, then through gRPC.
  for path in shm grpc; do
    run="$WORK/worker-chaos-$round-$path"
    run_and_kill "$run" worker --set reliability.worker_restarts=1 --set transport.local=$path
    expect_eq "round $round ($path): job with worker $victim killed at ${delay}s exits 0" \
      "$status" "0"
    grep -q "worker-$victim was killed by signal 9" "$run.txt" \
      && pass "round $round ($path): the launcher reported the kill and restarted worker $victim" \
      || echo "round $round ($path): worker $victim had finished before the kill"
    check_outcome "$round ($path)" "$run"
    [ "$status" == 0 ] && survived=$((survived + 1))
  done

  # A server, killed; the run resumed from its checkpoints.
  run="$WORK/server-chaos-$round"
  run_and_kill "$run" server --set checkpoint.interval_seconds=2
  if grep -q "server-$victim was killed by signal 9" "$run.txt"; then
    expect_eq "round $round: job with server $victim killed at ${delay}s exits 1" "$status" "1"
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 20 else 1)" "$stopped_in" \
      && pass "round $round: stopped ${stopped_in}s after the kill, naming server-$victim" \
      || fail "round $round: stopped ${stopped_in}s after the kill"
    worst=$(python3 -c "import sys; print(max(float(sys.argv[1]), float(sys.argv[2])))" "$worst" "$stopped_in")
    timeout 240 "$MONSOON" run --resume "$run" >"$run.resume.txt" 2>&1
    expect_eq "round $round: monsoon run --resume exits 0" "$?" "0"
    expect_resumed "$run" "round $round"
  else
    ended_before_kill "round $round"
  fi
  check_outcome "$round" "$run"
  [ -f "$run/summary.json" ] && survived=$((survived + 1))
done
# A server killed where reliability.server_restarts allows it: the launcher itself resumes
# the job from the servers' checkpoints, and the job finishes.
run="$WORK/server-auto-resume"
run_and_kill "$run" server --set checkpoint.interval_seconds=2 --set reliability.server_restarts=1
if grep -q "server-$victim was killed by signal 9 (Killed); resuming the job" "$run.txt"; then
  expect_eq "auto-resume: job with server $victim killed at ${delay}s exits" "$status" "0"
  expect_resumed "$run" "auto-resume (no second command)"
else
  ended_before_kill auto-resume
fi
check_outcome auto-resume "$run"

# A worker lost for good (no restarts): the others finish, the servers report the loss by
# index and address within the peer timeout, and summary.json counts it.
lost="$WORK/worker-lost"
pace 4
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$lost" "${paced[@]}" \
  --set reliability.peer_timeout_seconds=2 >"$lost.txt" 2>&1 &
job=$!
wait_for_file "$lost/metrics/worker-1.csv"
pkill -9 -f "monsoon worker --run-dir $lost --index 1"
wait "$job"
expect_eq "job that lost worker 1 for good exits" "$?" "0"
grep -q "worker-1 was killed by signal 9 (Killed); the job carries on without it" "$lost.txt" \
  && pass "the launcher carried on without worker 1" || fail "$(tail -3 "$lost.txt")"
grep -q "worker 1 (ipv4:127.0.0.1:[0-9]*) lost: nothing heard for" "$lost/logs/server-0.log" \
  && pass "server 0 reported: $(grep -o 'worker 1 (.*) lost: nothing heard for [0-9.]*s' "$lost/logs/server-0.log")" \
  || fail "server 0 did not report the lost worker"
expect_eq "summary.json workers_lost" "$(json_get "$lost/summary.json" workers_lost)" "1"

# A worker that never starts (a task that died before connecting), roles started by hand as
# srun would: the servers give it up reliability.join_timeout_seconds after they started, the
# job finishes without it and `monsoon summarize` counts it.
never="$WORK/worker-never-started"
"$MONSOON" prepare configs/linear_regression.yaml --run-dir "$never" \
  --set transport.rendezvous_timeout_seconds=3 --set reliability.join_timeout_seconds=4 >/dev/null
started=$SECONDS
timeout 60 "$MONSOON" server --run-dir "$never" --index 0 >"$never-server.txt" 2>&1 &
server=$!
timeout 60 "$MONSOON" evaluator --run-dir "$never" >/dev/null 2>&1 &
evaluator=$!
timeout 60 "$MONSOON" worker --run-dir "$never" --index 0 >/dev/null 2>&1
expect_eq "worker 0 alone exits" "$?" "0"
wait "$server"
expect_eq "its server exits" "$?" "0"
wait "$evaluator"
expect_eq "its evaluator exits" "$?" "0"
echo "every role had exited $((SECONDS - started)) s after the server started"
grep -q "worker 1 (address unknown) lost: never heard from since the server started" \
  "$never-server.txt" \
  && pass "server 0 reported: $(grep -o 'worker 1 (.*) lost: never heard from .* ago' "$never-server.txt")" \
  || fail "server 0 did not report the worker that never started: $(tail -3 "$never-server.txt")"
"$MONSOON" summarize --run-dir "$never" >/dev/null
expect_eq "summary.json workers_lost" "$(json_get "$never/summary.json" workers_lost)" "1"

# No worker ever starts: the server gives both up, exits 1 saying so, and `monsoon summarize`
# refuses the run rather than report its untrained weights as the result.
none="$WORK/no-worker-started"
"$MONSOON" prepare configs/linear_regression.yaml --run-dir "$none" \
  --set transport.rendezvous_timeout_seconds=3 --set reliability.join_timeout_seconds=4 >/dev/null
timeout 60 "$MONSOON" evaluator --run-dir "$none" >/dev/null 2>&1 &
evaluator=$!
timeout 60 "$MONSOON" server --run-dir "$none" --index 0 >"$none-server.txt" 2>&1
expect_eq "a server that lost every worker exits" "$?" "1"
wait "$evaluator"
grep -q "server 0: every worker was lost and none finished" "$none-server.txt" \
  && pass "and says: $(grep -o 'every worker was lost and none finished' "$none-server.txt")" \
  || fail "server without workers: $(tail -2 "$none-server.txt")"
"$MONSOON" summarize --run-dir "$none" >/dev/null 2>"$none-summarize.txt"
expect_eq "summarize refuses a run without a finished worker" "$?" "1"
grep -q "server 0 last saw 0 of 2 workers finished and 2 lost" "$none-summarize.txt" \
  && pass "summarize: $(head -c 90 "$none-summarize.txt")" || fail "$(cat "$none-summarize.txt")"
[ ! -e "$none/summary.json" ] && pass "no summary.json without a finished worker" \
  || fail "summary.json written for a run without a finished worker"

# The evaluator killed, with reliability.evaluator_restarts: the launcher restarts it, the new
# process appends to evaluator.csv, writes params.bin at the end, and the job exits 0.
evk="$WORK/evaluator-killed"
pace 8  # training outlasts the evaluator's second and third scores, its kill and restart
timeout 120 "$MONSOON" run configs/linear_regression.yaml --run-dir "$evk" "${paced[@]}" \
  --set reliability.evaluator_restarts=1 >"$evk.txt" 2>&1 &
job=$!
for _ in $(seq 100); do
  [ "$(rows "$evk/metrics/evaluator.csv")" -ge 2 ] && break
  sleep 0.1
done
rows_before=$(rows "$evk/metrics/evaluator.csv")
pkill -9 -f "monsoon evaluator --run-dir $evk"
wait "$job"
expect_eq "job whose evaluator was killed exits" "$?" "0"
grep -q "evaluator was killed by signal 9 (Killed); restarting it" "$evk.txt" \
  && pass "the launcher restarted the evaluator" || fail "$(tail -3 "$evk.txt")"
rows_after=$(rows "$evk/metrics/evaluator.csv")
[ "$rows_after" -gt "$rows_before" ] \
  && pass "the restarted evaluator appended to evaluator.csv ($rows_before -> $rows_after lines)" \
  || fail "evaluator.csv: $rows_before lines before the kill, $rows_after after"
fits_line "$evk" && pass "the job with a restarted evaluator fits its line" || fail "its fit"

echo "SCORECARD chaos: $((3 * rounds)) kill -9 (workers on both paths, servers), $survived survived; slowest stop after a server kill ${worst}s; fault-free accuracy $reference"
finish
