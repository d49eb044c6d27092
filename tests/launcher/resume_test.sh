#!/usr/bin/env bash
# Resuming, with real processes (README "Reliability and security"):
#   - a server whose checkpoints are all damaged, or belong to another run with the same
#     layout, refuses to resume, naming the server and the file; nothing falls back to the
#     initial weights;
#   - after a server's kill and a resume, each worker's metrics hold each step once and
#     summary.json's wall_seconds covers both invocations;
#   - a worker stopped (SIGSTOP) until after training ended wakes, sees the job finished
#     without it and exits 0: the job still ends with exit 0 and summary.json.
source tests/launcher/test_lib.sh

config=configs/linear_regression.yaml
pace 8  # at least 13 s of training: the kill comes after two checkpoints of each server
# Through gRPC (the sleeper below and monsoon_run_test's resumes take the shared segments).
job_args=(--set cluster.servers=2 "${paced[@]}" --set checkpoint.interval_seconds=1
  --set transport.local=grpc)

# A run whose server 0 is killed mid-training: the launcher stops the job.
run="$WORK/killed"
"$MONSOON" run "$config" --run-dir "$run" "${job_args[@]}" >"$run.txt" 2>&1 &
job=$!
for _ in $(seq 100); do
  [ "$(rows "$run/metrics/worker-1.csv")" -gt 100 ] && break
  sleep 0.1
done
# A few periodic checkpoints: at least two on each server.
checkpoints() { ls "$run"/checkpoints/server-"$1"/ckpt-*.bin 2>/dev/null | wc -l; }
for _ in $(seq 300); do
  [ "$(checkpoints 0)" -ge 2 ] && [ "$(checkpoints 1)" -ge 2 ] && break
  sleep 0.1
done
pkill -9 -f "monsoon server --run-dir $run --index 0"
wait "$job"
expect_eq "job whose server 0 was killed exits" "$?" "1"
first_wall=$(cat "$run/wall_seconds")

# Another run of the same job, whose checkpoints have the same layout.
other="$WORK/other"
timeout 120 "$MONSOON" run "$config" --run-dir "$other" "${job_args[@]}" \
  --set training.epochs=5 >/dev/null 2>&1
expect_eq "another run of the job exits" "$?" "0"

cp -a "$run/checkpoints" "$WORK/checkpoints.saved"
# resume_refused LABEL EXPECTED: `monsoon run --resume` fails, saying EXPECTED.
resume_refused() {
  timeout 120 "$MONSOON" run --resume "$run" >"$run.refused.txt" 2>&1
  expect_eq "$1: monsoon run --resume exits" "$?" "1"
  grep -qF -- "$2" "$run.refused.txt" && pass "$1: refused, saying: $2" \
    || fail "$1: $(grep -m3 'monsoon' "$run.refused.txt")"
  rm -rf "$run/checkpoints" && cp -a "$WORK/checkpoints.saved" "$run/checkpoints"
}
for f in "$run"/checkpoints/server-1/ckpt-*.bin; do
  printf 'X' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
done
resume_refused "every checkpoint of server 1 damaged" \
  "server 1 cannot resume: no checkpoint in $run/checkpoints/server-1 verifies"
grep -q "continue it with" "$run.refused.txt" \
  && fail "a resume was suggested for a failure it cannot fix" || pass "no resume suggested"
rm "$run"/checkpoints/server-0/ckpt-*.bin
cp "$other"/checkpoints/server-0/ckpt-*.bin "$run/checkpoints/server-0/"
resume_refused "server 0 given another run's checkpoint" \
  "server 0 cannot resume: checkpoint $run/checkpoints/server-0/"
grep -q "belongs to another run (run id" "$run.refused.txt" \
  && pass "... as belonging to another run" || fail "not named as another run's"

timeout 120 "$MONSOON" run --resume "$run" >"$run.resume.txt" 2>&1
expect_eq "with its own checkpoints, monsoon run --resume exits" "$?" "0"
fits_line "$run" && pass "the resumed job fit the line" || fail "the resumed job did not fit"
python3 - "$run" "$first_wall" <<'PY'
import csv, json, sys
run, first = sys.argv[1], float(sys.argv[2])
for i in (0, 1):
    steps = [int(float(r["step"])) for r in csv.DictReader(open(f"{run}/metrics/worker-{i}.csv"))]
    assert len(steps) == len(set(steps)), f"worker {i}: {len(steps) - len(set(steps))} repeated steps"
    assert steps == sorted(steps), f"worker {i}: steps out of order"
wall = json.load(open(f"{run}/summary.json"))["wall_seconds"]
assert wall > first + 1, (wall, first)
print(f"each step once in both workers' metrics; wall_seconds {wall:.1f} > first invocation's {first:.1f}")
PY
expect_eq "each step counted once, wall_seconds over both invocations" "$?" "0"

# A worker stopped until training ended without it.
run="$WORK/sleeper"
pace 4
"$MONSOON" run "$config" --run-dir "$run" "${paced[@]}" \
  --set reliability.peer_timeout_seconds=2 >"$run.txt" 2>&1 &
job=$!
wait_for_file "$run/metrics/worker-1.csv"
pkill -STOP -f "monsoon worker --run-dir $run --index 1"
for _ in $(seq 600); do
  [ -f "$run/rendezvous/finished-server-0" ] && ! pgrep -f "monsoon server --run-dir $run " >/dev/null && break
  sleep 0.1
done
pkill -CONT -f "monsoon worker --run-dir $run --index 1"
timeout 60 tail --pid="$job" -f /dev/null
wait "$job"
expect_eq "job whose worker 1 woke after the end exits" "$?" "0"
grep -q "the job finished without this worker" "$run/logs/worker-1.log" \
  && pass "worker 1 saw the job finished without it" || fail "$(tail -2 "$run/logs/worker-1.log")"
expect_eq "summary.json workers_lost" "$(json_get "$run/summary.json" workers_lost)" "1"
finish
