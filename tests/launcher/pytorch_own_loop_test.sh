#!/usr/bin/env bash
# A PyTorch script that keeps its own training loop (README "Keep your own training loop"):
#   - examples/pytorch_own_loop.py, the classic PyTorch MNIST example, reaches >= 0.88 after
#     its 2 epochs (shortened: >= 0.8 after 1 epoch of the first 19,200 training images) under
#     Downpour with 2 workers, one of them killed and restarted on the way:
#     every push applied once, the restarted loop resuming its data, the loop's losses in the
#     workers' metrics, the evaluator scoring with the script's own test();
#   - the same script runs under sync (scored by Monsoon's evaluator on the job's test data)
#     and easgd (shortened: a copy without its test() passes, one batch an epoch, --dry-run);
#   - README's diff is every line that differs from the plain script: undone on the example,
#     it leaves a PyTorch script without Monsoon, which trains;
#   - a loop that outlives training.max_steps, batches of another size than the job's, a
#     DistributedOptimizer before init, a loop that never steps the DistributedOptimizer or
#     steps the optimizer it wraps, a DataLoader that shuffles the whole set instead of the
#     worker's shard, and a layer added after init are clear errors.
source tests/launcher/test_lib.sh

at_least() {  # at_least WHAT VALUE MIN
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$2" "$3" \
    && pass "$1: $2 >= $3" || fail "$1: $2 < $3"
}
# Shortened (the default), the scripts and jobs below read the first 19,200 training images
# (150 steps a worker an epoch) and 2,000 test images: $data, the directory of the script's
# FMNIST and of the job's data section.
data=/usr/share/datasets/fashion-mnist train_rows=60000
if ! long_form; then
  data="$WORK/fmnist" train_rows=19200
  mkdir -p "$data"
  fmnist_subset train "$train_rows" "$data/train"
  fmnist_subset t10k 2000 "$data/t10k"
fi
steps=$(( (train_rows / 2 + 63) / 64 ))

# job NAME SCRIPT ARGS...: $WORK/NAME.yaml, examples/pytorch_own_loop.yaml running SCRIPT with
# the arguments ARGS, on $data.
job() {
  local name=$1 script=$2
  shift 2
  local args=""
  for a in "$@"; do args+=", \"$a\""; done
  sed -e "s|pytorch_own_loop.py, --epochs, \"2\"\]|$script$args]|" \
    -e "s|/usr/share/datasets/fashion-mnist|$data|" examples/pytorch_own_loop.yaml >"$WORK/$name.yaml"
}

# example_copy NAME [FROM TO ...]: $WORK/NAME.py, the example on $data with each FROM replaced by
# TO, without the workers' test() pass after each epoch (every test image on one core).
example_copy() {
  local name=$1
  shift
  python3 - examples/pytorch_own_loop.py "$WORK/$name.py" "$@" \
    "        test(model, device, test_loader)
        scheduler.step()" "        scheduler.step()" \
    'FMNIST = "/usr/share/datasets/fashion-mnist"' "FMNIST = \"$data\"" <<'PY'
import sys
text = open(sys.argv[1]).read()
for old, new in zip(sys.argv[3::2], sys.argv[4::2]):
    assert old in text, old
    text = text.replace(old, new)
open(sys.argv[2], "w").write(text)
PY
}

# dry_copy NAME [FROM TO ...]: example_copy's script as $WORK/NAME.yaml's program, run with
# --dry-run (one batch an epoch, so training.max_steps bounds the run).
dry_copy() {
  example_copy "$@"
  job "$1" "$WORK/$1.py" --epochs 2 --dry-run
}

# Two parts, each a shard of its own where Bazel runs the test sharded (BUILD); unsharded,
# both run.
if in_shard 0; then

# Worker 0 is killed a third of the way: restarted, it resumes Monsoon's pushes and the loop's
# data where the servers last heard from it. The evaluator scores the final weights only (it
# would take a core's share from the workers). Shortened: 1 epoch of a copy without the
# workers' test() passes.
if long_form; then
  epochs=2 target=0.88 script=$PWD/examples/pytorch_own_loop.py
else
  epochs=1 target=0.8 script=$WORK/downpour.py
  example_copy downpour
fi
job downpour "$script" --epochs "$epochs"
run="$WORK/downpour"
timeout 900 "$MONSOON" run "$WORK/downpour.yaml" --run-dir "$run" \
  --set reliability.worker_restarts=1 --set evaluation.interval_seconds=600 \
  >"$WORK/downpour.txt" 2>&1 &
launcher=$!
for _ in $(seq 1200); do [ "$(rows "$run/metrics/worker-0.csv")" -gt $((steps / 3)) ] && break; sleep 0.1; done
kill_program_worker "$run" "$script" 0
wait "$launcher"
expect_eq "own loop, downpour, worker 0 killed: exit status" "$?" "0"
tail -1 "$WORK/downpour.txt"
grep -q "worker-0 was killed by signal 9 (Killed); restarting it" "$WORK/downpour.txt" \
  && pass "own loop: the killed worker was restarted" || fail "no restart"
at_least "own loop, downpour: test accuracy after $epochs epoch(s)" \
  "$(json_get "$run/summary.json" final_test_accuracy)" "$target"
check_ledger "$run" && pass "own loop: every push applied exactly once" || fail "ledger"
grep -q "^Test set: Average loss" "$run/logs/evaluator.log" \
  && pass "own loop: the evaluator scored with the script's test()" || fail "no test() output"
python3 - "$run/metrics/worker-0.csv" "$run/metrics/worker-1.csv" "$((epochs * steps))" <<'PY'
import csv, sys
killed, other = (list(csv.DictReader(open(path))) for path in sys.argv[1:3])
assert len(other) == int(sys.argv[3]) and all(float(r["loss"]) > 0 for r in other), len(other)
# Each step once, in order; the killed worker may lack one: a step whose push every server
# applied while the worker was killed before it wrote the step's row (README "Outputs").
steps, theirs = [r["step"] for r in killed], [r["step"] for r in other]
assert steps == [s for s in theirs if s in set(steps)] and len(theirs) - len(steps) <= 1, \
    (len(steps), len(theirs), sorted(set(theirs) - set(steps)))
PY
expect_eq "own loop: the restarted worker's loop resumed its data ($epochs x $steps steps, losses kept)" \
  "$?" "0"
fi

if in_shard 1; then
# Sync's evaluator scores the job's test data instead of the script's test(). Shortened (the
# default): a copy of the example (dry_copy: one batch an epoch, no workers' test() passes;
# training.max_steps says the short run is meant), the test set's first 1,000 rows for sync's
# evaluator (which scores the initial and the final weights) and easgd with no evaluator.
if long_form; then
  short="1 epoch" bound=() sync_test=() easgd_evaluator=()
else
  short="a dry-run copy" bound=(--set training.max_steps=100)
  mapfile -t sync_test < <(test_subset 1000)
  easgd_evaluator=(--set cluster.evaluator=false)
fi
for algorithm in sync easgd; do
  if [ "$algorithm" = sync ]; then
    settings=(--set evaluation.by_program=false "${sync_test[@]}")
  else
    settings=("${easgd_evaluator[@]}")
  fi
  if long_form; then
    job "$algorithm" "$PWD/examples/pytorch_own_loop.py" --epochs 1
  else
    dry_copy "$algorithm"
  fi
  timeout 600 "$MONSOON" run "$WORK/$algorithm.yaml" --run-dir "$WORK/$algorithm" \
    --set training.algorithm="$algorithm" "${settings[@]}" "${bound[@]}" \
    >"$WORK/$algorithm.txt" 2>&1
  expect_eq "own loop, $algorithm ($short): exit status" "$?" "0"
  check_ledger "$WORK/$algorithm" && pass "own loop, $algorithm: every push applied once" \
    || fail "own loop, $algorithm: ledger"
  long_form && at_least "own loop, $algorithm: test accuracy after 1 epoch" \
    "$(json_get "$WORK/$algorithm/summary.json" final_test_accuracy)" 0.8
done

# README's diff, undone on the example: each + line that follows - lines goes back to them,
# a lone + line goes. What is left must not mention Monsoon, and must train (one batch).
python3 - README.md examples/pytorch_own_loop.py "$WORK/plain.py" <<'PY'
import re, sys
readme, example, plain = sys.argv[1:]
text = open(readme).read()
block = re.search(r"### Keep your own training loop.*?```diff\n(.*?)```", text, re.S).group(1)
diff = block.splitlines()
changed = [l for l in diff if l[:1] in "+-"]
assert len(changed) == len(diff) and len(changed) <= 10, diff
lines = open(example).read().splitlines()
removed = []
for l in diff:
    if l.startswith("-"):
        removed.append(l[1:])
        continue
    i = lines.index(l[1:])  # ValueError: a + line the example does not have
    lines[i : i + 1] = removed
    removed = []
assert not removed, removed
body = [l for l in lines if not l.lstrip().startswith(("#", '"', "README", "monsoon run"))]
assert not any("monsoon" in l for l in body), [l for l in body if "monsoon" in l]
open(plain, "w").write("\n".join(lines) + "\n")
PY
expect_eq "README's diff is every line that differs from the plain script" "$?" "0"
sed -i "s|^FMNIST = .*|FMNIST = \"$data\"|" "$WORK/plain.py"
OMP_NUM_THREADS=$(nproc) timeout 300 python3 "$WORK/plain.py" --epochs 1 --dry-run \
  >"$WORK/plain.txt" 2>&1
expect_eq "the plain script README's diff leaves trains without Monsoon" "$?" "0"

grep -q "Test set:" "$WORK/sync/logs/evaluator.log" \
  && fail "sync: the script's test() scored" || pass "sync: Monsoon's evaluator scored the test data"
at_least "sync: the evaluator scored (a number)" "$(json_get "$WORK/sync/summary.json" final_test_accuracy)" 0

# A loop that goes on after the worker's last step (training.max_steps), batches of another
# size than training.batch_size, and a step before init.
# refused NAME WHAT TEXT SETTINGS...: the example's job with SETTINGS (one worker) fails, saying
# TEXT
refused() {
  local name=$1 what=$2 text=$3 status
  shift 3
  example_copy "$name"
  job "$name" "$WORK/$name.py"
  timeout 300 "$MONSOON" run "$WORK/$name.yaml" --run-dir "$WORK/$name" \
    --set cluster.evaluator=false --set cluster.workers=1 "$@" >"$WORK/$name.txt" 2>&1
  status=$?
  [ "$status" -ne 0 ] && grep -qF "$text" "$WORK/$name.txt" && pass "$what: exit $status, named" \
    || fail "$what: exit $status: $(tail -3 "$WORK/$name.txt")"
}
refused max_steps "a loop past training.max_steps" \
  "the job's worker has finished (training.max_steps) while the training loop goes on" \
  --set training.max_steps=5
refused batch "batches of another size" \
  "the training loop's batches have 64 examples but the job's training.batch_size is 32" \
  --set training.batch_size=32
MONSOON_ROLE=worker MONSOON_RUN_DIR="$WORK/downpour" MONSOON_INDEX=0 MONSOON_GPU=-1 \
  MONSOON_SEED=1 PYTHONPATH="$PWD/python" \
  python3 - >"$WORK/early.txt" 2>&1 <<'PY'
import torch
import monsoon.torch
model = torch.nn.Linear(2, 2)
optimizer = monsoon.torch.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
PY
grep -qF "monsoon.torch.init(module) must come before DistributedOptimizer(...)" "$WORK/early.txt" \
  && pass "DistributedOptimizer before init: named" || fail "before init: $(tail -2 "$WORK/early.txt")"

# The loop's own mistakes, each in a copy of the example: the job fails naming the mistake.
misused() {  # misused NAME TEXT [WORKERS]: NAME's job of WORKERS (1) workers fails, saying TEXT
  timeout 300 "$MONSOON" run "$WORK/$1.yaml" --run-dir "$WORK/run-$1" --set cluster.evaluator=false \
    --set cluster.workers="${3:-1}" --set training.max_steps=100 >"$WORK/$1.txt" 2>&1
  local status=$?
  [ "$status" -ne 0 ] && grep -qF "$2" "$WORK/$1.txt" && pass "$1: exit $status, named" \
    || fail "$1: exit $status: $(tail -4 "$WORK/$1.txt")"
}
dry_copy no_step "        optimizer.step(loss=loss)" "        pass"
misused no_step "ended after 0 steps: the training loop never called DistributedOptimizer.step()"
dry_copy wrapped_step "        optimizer.step(loss=loss)" "        optimizer.optimizer.step()"
misused wrapped_step "the loop called the wrapped optimizer's own step() (opt.optimizer.step())"
dry_copy shuffled "sampler=monsoon.torch.DistributedSampler(train_set))" "shuffle=True)" \
  "        train_loader.sampler.set_epoch(epoch)" ""
misused shuffled "the training DataLoader draws $train_rows examples per epoch (RandomSampler) but this worker's shard of its $train_rows is $((train_rows / 2)): give it sampler=monsoon.torch.DistributedSampler(dataset)" 2
dry_copy late_layer "    optimizer = monsoon.torch.DistributedOptimizer(optimizer)" \
  "    optimizer = monsoon.torch.DistributedOptimizer(optimizer)
    model.head = torch.nn.Linear(10, 10)"
misused late_layer "the module now has a tensor it did not have at monsoon.torch.init: head.weight (10, 10)"
fi

finish
