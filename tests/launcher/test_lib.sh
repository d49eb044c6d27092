# Shared helpers for Monsoon's shell tests (sourced). Run from Bazel's runfiles root.
set -uo pipefail

MONSOON="${MONSOON:-$PWD/launcher/monsoon}"  # a bundle's checks point it at theirs
WORK="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

# long_form: whether the tests run their long forms (tools/test.sh --long sets
# MONSOON_LONG_TESTS=1): full-length jobs where the default runs them shortened, checking the
# same things.
long_form() { [ "${MONSOON_LONG_TESTS:-0}" = 1 ]; }

# in_shard N: whether this run takes part N (from 0) of a test that Bazel shards (BUILD's
# shard_count: each shard a run of its own, with TEST_SHARD_INDEX of TEST_TOTAL_SHARDS); every
# part when it is not sharded. Tells Bazel that the test shards.
in_shard() {
  [ -z "${TEST_SHARD_STATUS_FILE:-}" ] || touch "$TEST_SHARD_STATUS_FILE"
  [ -z "${TEST_TOTAL_SHARDS:-}" ] || [ $(($1 % TEST_TOTAL_SHARDS)) = "${TEST_SHARD_INDEX:-0}" ]
}

# Each check's line carries the seconds since the test started, so a log shows where its time goes.
pass() { echo "PASS (${SECONDS}s): $*"; }
fail() { echo "FAIL (${SECONDS}s): $*"; failures=$((failures + 1)); }

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
  if [ "$2" == "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}

# json_get FILE KEY -> value printed by python (None for null)
json_get() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# wait_for_file FILE: until FILE exists and is not empty, for at most 10 s.
wait_for_file() {
  for _ in $(seq 100); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# rows FILE: lines in FILE (0 when it does not exist yet).
rows() { wc -l 2>/dev/null <"$1" || echo 0; }

# kill_program_worker RUN_DIR SCRIPT INDEX: kill -9 the worker program SCRIPT running as worker
# INDEX of the job in RUN_DIR (by its environment).
kill_program_worker() {
  local p env_of
  for p in $(pgrep -f "$2" || true); do
    env_of=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null || true)
    grep -qx "MONSOON_RUN_DIR=$1" <<<"$env_of" && grep -qx "MONSOON_ROLE=worker" <<<"$env_of" &&
      grep -qx "MONSOON_INDEX=$3" <<<"$env_of" && kill -9 "$p" && echo "killed worker $3 ($p)"
  done
}

# pace MS: sets $paced to the settings of a configs/linear_regression.yaml job that trains for a
# while on little CPU, for tests that act on a job while it runs: 40 epochs (1,600 steps of
# each of 2 workers, enough to fit the line) with every step of every worker sleeping MS
# milliseconds (stragglers, fixed), so at least 1.6 * MS seconds of training.
pace() {
  paced=(--set training.epochs=40 --set stragglers.probability=1
    --set stragglers.distribution=fixed --set "stragglers.delay_ms=$1")
}

# fits_line RUN_DIR [TOLERANCE]: the linear jobs' data (configs/data/linear_*.csv) come from
# y = 2.5 x - 1.25 plus noise; the fit in RUN_DIR/summary.json is within TOLERANCE (0.01) of
# both. (The training set's own least-squares line is m = 2.4978, b = -1.2512, so rounding m
# to 2 decimals is a coin toss.)
fits_line() {
  python3 - "$1/summary.json" "${2:-0.01}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = {t["name"]: t["values"] for t in s["parameters"]}
m, b = p["dense0.weight"][0], p["dense0.bias"][0]
print(f"{s['algorithm']}: learned m={m:.5f} b={b:.5f} in {s['wall_seconds']:.1f} s")
tolerance = float(sys.argv[2])
sys.exit(0 if abs(m - 2.5) <= tolerance and abs(b + 1.25) <= tolerance else 1)
PY
}

# run_linear NAME --set ... : runs configs/linear_regression.yaml in $WORK/NAME; checks exit 0
# and m, b within 0.02.
run_linear() {
  local name="$1"
  shift
  timeout 240 "$MONSOON" run configs/linear_regression.yaml --run-dir "$WORK/$name" "$@" \
    >"$WORK/$name.txt" 2>&1
  expect_eq "$name: exit status" "$?" "0"
  fits_line "$WORK/$name" 0.02 && pass "$name: m and b within 0.02" || fail "$name: the fit"
}

# check_ledger RUN_DIR: every server's ledger against every worker's final push count.
check_ledger() {
  python3 - "$1" <<'PY'
import csv, glob, re, sys
run = sys.argv[1]
pushes = {}
for log in glob.glob(f"{run}/logs/worker-*.log"):
    w = int(re.search(r"worker-(\d+)\.log", log).group(1))
    done = re.findall(r"worker \d+ done: \d+ steps, \d+ samples, (\d+) pushes", open(log).read())
    if done:
        pushes[w] = int(done[-1])
bad, rows, duplicates = [], 0, 0
for path in glob.glob(f"{run}/metrics/ledger-server-*.csv"):
    for r in csv.DictReader(open(path)):
        w, n = int(r["worker"]), int(float(r["applied"]))
        rows += 1
        duplicates += int(float(r["duplicates"]))
        if int(float(r["processed"])) != n:
            bad.append(f"{path} chunk {r['chunk']} worker {w}: processed {r['processed']} != applied {n}")
        if int(float(r["sequence_sum"])) != n * (n + 1) // 2:
            bad.append(f"{path} chunk {r['chunk']} worker {w}: sequence sum {r['sequence_sum']} != {n * (n + 1) // 2}")
        if pushes.get(w) != n:
            bad.append(f"{path} chunk {r['chunk']} worker {w}: applied {n}, the worker made {pushes.get(w)}")
print(f"ledger: {rows} (chunk, worker) rows, {sum(pushes.values())} pushes, {duplicates} duplicates ignored")
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad or rows == 0 else 0)
PY
}

# fmnist_subset SPLIT ROWS OUT: the first ROWS of Fashion-MNIST's SPLIT (train or t10k) as IDX
# files OUT-images-idx3-ubyte.gz and OUT-labels-idx1-ubyte.gz.
fmnist_subset() {
  python3 - "/usr/share/datasets/fashion-mnist/$1" "$3" "$2" <<'PY'
import gzip, struct, sys
source, out, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
for kind, header, row in (("images-idx3", 16, 784), ("labels-idx1", 8, 1)):
    data = gzip.open(f"{source}-{kind}-ubyte.gz").read()
    head = data[:4] + struct.pack(">I", rows) + data[8:header]
    gzip.open(f"{out}-{kind}-ubyte.gz", "wb", compresslevel=1).write(
        head + data[header:header + rows * row])
PY
}

# test_subset ROWS: the first ROWS of Fashion-MNIST's test split as IDX files under $WORK,
# printed one word a line as the settings that make them a job's test set (read them with
# mapfile). An evaluator scores them in a
# tenth of the time of the 10,000 rows (and so does PyTorch, in the checks that reload weights).
test_subset() {
  fmnist_subset t10k "$1" "$WORK/t$1"
  printf '%s\n' --set "data.test_images=$WORK/t$1-images-idx3-ubyte.gz" \
    --set "data.test_labels=$WORK/t$1-labels-idx1-ubyte.gz"
}

# skip REASON: this test cannot run its subject here (no GPU, not root). Prints the line
# tools/test.sh counts as a skip and ends the test; with MONSOON_REQUIRE_GPU=1 a GPU test's
# skip (skip_gpu) is a failure instead.
skip() {
  echo "SKIPPED: $*"
  exit 0
}
skip_gpu() {
  if [ "${MONSOON_REQUIRE_GPU:-0}" == "1" ]; then
    echo "FAIL: MONSOON_REQUIRE_GPU=1 but $*"
    exit 1
  fi
  skip "$*"
}

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
