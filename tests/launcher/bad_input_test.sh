#!/usr/bin/env bash
# Bad YAML and bad jobs: a non-zero exit with one clear line naming the field or file (no stack
# dump), and a failing role stops the whole job with its name and log.
source tests/launcher/test_lib.sh

# expect_config_error NAME EXPECTED_SUBSTRING monsoon-args...
expect_config_error() {
  local name="$1" expected="$2"
  shift 2
  timeout 30 "$MONSOON" "$@" >"$WORK/out.txt" 2>"$WORK/err.txt"
  local code=$?
  local lines
  lines=$(wc -l <"$WORK/err.txt")
  if [ "$code" -eq 2 ] && [ "$lines" -eq 1 ] && grep -qF -- "$expected" "$WORK/err.txt"; then
    pass "$name: $(cat "$WORK/err.txt")"
  else
    fail "$name: exit $code, $lines line(s): $(cat "$WORK/err.txt")"
  fi
}

cp configs/linear_regression.yaml "$WORK/job.yaml"
cp -r configs/data "$WORK/data"
expect_config_error "unknown key" "training.epoch: unknown key" \
  validate "$WORK/job.yaml" --set training.epoch=3
expect_config_error "wrong type" "training.epochs: expected an integer" \
  validate "$WORK/job.yaml" --set training.epochs=three
expect_config_error "bad choice" "optimizer.type: 'rmsprop' is not allowed (allowed: sgd, momentum, adagrad, adam)" \
  run "$WORK/job.yaml" --run-dir "$WORK/r1" --set optimizer.type=rmsprop
expect_config_error "empty --set value" "--set training.epochs: no value (write training.epochs=VALUE" \
  validate "$WORK/job.yaml" --set training.epochs=
sed 's/^  epochs: .*/  epochs:/' "$WORK/job.yaml" >"$WORK/job_no_value.yaml"
expect_config_error "field without a value" "training.epochs: no value (leave the key out for its default)" \
  validate "$WORK/job_no_value.yaml"
expect_config_error "missing data file" "data.train: file not found: $WORK/missing.csv" \
  run "$WORK/job.yaml" --run-dir "$WORK/r2" --set data.train=missing.csv
expect_config_error "missing config" "config file not found: $WORK/nope.yaml" \
  run "$WORK/nope.yaml"
# Algorithm knobs out of range: the field and the allowed range.
expect_config_error "unknown algorithm" "training.algorithm: 'hogwild' is not allowed (allowed: downpour, sync, ssp, easgd, eamsgd)" \
  validate "$WORK/job.yaml" --set training.algorithm=hogwild
expect_config_error "tau <= 0" "easgd.tau: expected an integer in [1, 1048576], got '0'" \
  validate "$WORK/job.yaml" --set easgd.tau=0
expect_config_error "alpha <= 0" "easgd.alpha: expected a number in (0, 1], got '-0.1'" \
  validate "$WORK/job.yaml" --set easgd.alpha=-0.1
expect_config_error "alpha and beta" "easgd.beta: give easgd.alpha or easgd.beta" \
  validate "$WORK/job.yaml" --set easgd.alpha=0.1 --set easgd.beta=0.5
expect_config_error "K > N" "sync.quorum: expected an integer in [0, 2], got '3'" \
  validate "$WORK/job.yaml" --set training.algorithm=sync --set sync.quorum=3
expect_config_error "negative SSP bound" "ssp.bound: expected an integer in [0, 1048576], got '-1'" \
  validate "$WORK/job.yaml" --set ssp.bound=-1
expect_config_error "bad staleness policy" "staleness.policy: 'ignore' is not allowed (allowed: accept, drop, scale)" \
  validate "$WORK/job.yaml" --set staleness.policy=ignore
# Valid but doubtful: alpha above the stability bound is a warning, not an error.
timeout 30 "$MONSOON" validate "$WORK/job.yaml" --set training.algorithm=easgd \
  --set easgd.alpha=0.99 --set easgd.learning_rate=0.5 >/dev/null 2>"$WORK/err.txt"
expect_eq "alpha above the stability bound: still valid" "$?" "0"
grep -q "warning: easgd: alpha = 0.99 exceeds the stability bound" "$WORK/err.txt" \
  && pass "stability warning: $(cat "$WORK/err.txt")" || fail "no stability warning: $(cat "$WORK/err.txt")"
# A bad study names the variant and the field.
printf 'study: s\nbase: job.yaml\nvariants:\n  - name: a\n    set: {easgd.tau: 0}\n' >"$WORK/study.yaml"
expect_config_error "bad study variant" "variant 'a': " compare "$WORK/study.yaml" --out "$WORK/s1"
printf 'study: s\nbase: job.yaml\nvariants: []\n' >"$WORK/study2.yaml"
expect_config_error "empty study" "variants: expected a non-empty list" compare "$WORK/study2.yaml"
printf 'study: s\nbase: job.yaml\ntarget_accuracy: high\nvariants:\n  - name: a\n' >"$WORK/study4.yaml"
expect_config_error "study target" "target_accuracy: expected a number in (0, 1], got 'high'" \
  compare "$WORK/study4.yaml" --out "$WORK/s4"
# Names that become directories stay inside the runs directory (and out of #SBATCH lines).
printf 'study: s\nbase: job.yaml\nvariants:\n  - name: ..\n' >"$WORK/study3.yaml"
expect_config_error "variant named .." "variants[0].name: expected 1 to 128 letters" \
  compare "$WORK/study3.yaml" --out "$WORK/s3"
cd "$WORK"  # a bad name's runs/JOB would be made here
expect_config_error "job name with a path" "job: expected 1 to 128 letters" \
  run job.yaml --set job=../../escape
cd - >/dev/null
[ ! -e "$WORK/../escape" ] && [ ! -e "$WORK/runs" ] && pass "no directory outside runs/ for a bad job name" \
  || fail "a bad job name made a directory"
expect_config_error "two words for an #SBATCH option" "slurm.partition: expected one word" \
  sbatch "$WORK/job.yaml" --set "slurm.partition='gpu --wrap=x'"

printf 'job: x\ncluster: {servers: 2\n' >"$WORK/broken.yaml"
expect_config_error "YAML syntax" "YAML syntax error at line" validate "$WORK/broken.yaml"
expect_config_error "unknown option" "were not expected: 1 --bogus (see monsoon run --help)" \
  run "$WORK/job.yaml" --bogus 1
expect_config_error "option given twice" "--run-dir: At Most 1 required but received 2" \
  run "$WORK/job.yaml" --run-dir "$WORK/r1" --run-dir "$WORK/r2"
expect_config_error "argument where a command takes none" \
  "status takes no argument '$WORK/r1' (give a run directory as --run-dir DIR)" status "$WORK/r1"
expect_config_error "two configs" "The following argument was not expected: $WORK/job.yaml" \
  run "$WORK/job.yaml" "$WORK/job.yaml"
expect_config_error "--set where a command takes none" \
  "The following argument was not expected: --set (see monsoon summarize --help)" \
  summarize --run-dir "$WORK/r1" --set training.epochs=2
expect_config_error "a config next to --resume" \
  "CONFIG.yaml excludes --resume" \
  prepare "$WORK/job.yaml" --resume --run-dir "$WORK/r1"
expect_config_error "--set next to run --resume" "--resume excludes --set" \
  run --resume "$WORK/r1" --set training.epochs=2
expect_config_error "launch without a config outside srun" "launch outside srun or mpirun" \
  launch --run-dir "$WORK/r1"
expect_config_error "--set without a config" "--set requires CONFIG.yaml" \
  launch --run-dir "$WORK/r1" --set training.epochs=2
mkfifo "$WORK/fifo.yaml"
expect_config_error "a FIFO as the config (no hang)" "fifo.yaml is not a regular file" \
  validate "$WORK/fifo.yaml"
expect_config_error "a directory as the config" "$WORK is a directory" run "$WORK"
printf 'job: x\njob: y\n' >"$WORK/twice.yaml"
expect_config_error "a key given twice" "job: given twice (lines 1 and 2)" validate "$WORK/twice.yaml"
expect_config_error "gen-linear: NaN noise" "--noise: expected a finite number >= 0" \
  gen-linear --out "$WORK/g.csv" --noise nan
expect_config_error "gen-linear: negative noise" "--noise: expected a finite number >= 0" \
  gen-linear --out "$WORK/g.csv" --noise -0.5
expect_config_error "gen-linear: infinite slope" "--slope: expected a finite number" \
  gen-linear --out "$WORK/g.csv" --slope inf
expect_config_error "gen-linear: too many rows" "--rows: Value 999999999 not in range 1 to" \
  gen-linear --out "$WORK/g.csv" --rows 999999999
expect_config_error "slurm.time SLURM would refuse" "slurm.time: expected MINUTES" \
  validate "$WORK/job.yaml" --set slurm.time=2h
"$MONSOON" --version >"$WORK/version.txt" 2>&1
expect_eq "--version: exit status" "$?" "0"
grep -q "^monsoon [0-9]" "$WORK/version.txt" && pass "--version: $(cat "$WORK/version.txt")" \
  || fail "--version: $(cat "$WORK/version.txt")"
expect_config_error "unknown command" "unknown command 'bogus' (see monsoon --help)" bogus
expect_config_error "a switch with a value" "Could not convert: --resume = x" \
  launch "$WORK/job.yaml" --run-dir "$WORK/r1" --resume=x
expect_config_error "an index out of range" "--index: Value -1 not in range" \
  server --run-dir "$WORK/r1" --index -1
"$MONSOON" run --help >"$WORK/help.txt" 2>&1
expect_eq "run --help: exit status" "$?" "0"
grep -q "^Usage: monsoon run" "$WORK/help.txt" && pass "run --help shows run's usage" \
  || fail "run --help: $(head -3 "$WORK/help.txt")"
[ ! -e "$WORK/r1" ] && pass "no run directory for a bad config" || fail "run directory created for a bad config"

# Malformed SLURM variables in an srun task: one line naming the variable, at once.
slurm_env=(SLURM_JOB_ID=7 SLURM_STEP_ID=0 SLURM_PROCID=1 SLURM_NTASKS=5 SLURM_LOCALID=1
           SLURM_NODEID=0 SLURM_STEP_NODELIST='mn[1-2]' SLURM_STEP_TASKS_PER_NODE='3,2')
expect_env_error() {  # NAME EXPECTED [VAR=VALUE | -VAR]...  (-VAR leaves VAR out)
  local name="$1" expected="$2"
  shift 2
  local vars=() v change
  for v in "${slurm_env[@]}"; do
    for change in "$@"; do
      [ "${change%%=*}" = "${v%%=*}" ] || [ "$change" = "-${v%%=*}" ] && continue 2
    done
    vars+=("$v")
  done
  for change in "$@"; do [[ "$change" == -* ]] || vars+=("$change"); done
  env -u SLURM_JOB_ID -u SLURM_STEP_ID "${vars[@]}" timeout 10 "$MONSOON" launch \
    --run-dir "$WORK/slurm_bad" >"$WORK/out.txt" 2>"$WORK/err.txt"
  local code=$? lines
  lines=$(wc -l <"$WORK/err.txt")
  if [ "$code" -eq 2 ] && [ "$lines" -eq 1 ] && grep -qF -- "$expected" "$WORK/err.txt"; then
    pass "$name: $(cat "$WORK/err.txt")"
  else
    fail "$name: exit $code, $lines line(s): $(cat "$WORK/err.txt")"
  fi
}
expect_env_error "bad SLURM_PROCID" "SLURM_PROCID='one' is not a non-negative integer" SLURM_PROCID=one
expect_env_error "bad node list" "SLURM_STEP_NODELIST: malformed host list 'mn[1-'" "SLURM_STEP_NODELIST=mn[1-"
expect_env_error "missing SLURM_NTASKS" "SLURM_NTASKS is not set" -SLURM_NTASKS
expect_env_error "batch script, not srun" "start \`monsoon launch\` with srun" -SLURM_STEP_ID

# Data that does not fit the model (1 feature, the model wants 2) is refused before any role
# starts, naming the file: the training set, and the test set too.
timeout 60 "$MONSOON" run "$WORK/job.yaml" --run-dir "$WORK/r3" --set model.input_dim=2 \
  >"$WORK/out.txt" 2>"$WORK/err.txt"
expect_eq "data that does not fit the model: exit status" "$?" "2"
grep -q "model.input_dim is 2 but data.train (.*) has 1 features" "$WORK/err.txt" \
  && pass "the misfit is named before any role starts" || fail "misfit message: $(cat "$WORK/err.txt")"
[ ! -e "$WORK/r3/logs" ] && pass "no role was started" || fail "roles were started: $(ls "$WORK/r3/logs")"
sed -e "s|test: .*|test: $WORK/one_feature_more.csv|" "$WORK/job.yaml" >"$WORK/job_test_misfit.yaml"
python3 -c "print('x,z,y'); [print(f'{i},{i},{2 * i}') for i in range(20)]" >"$WORK/one_feature_more.csv"
timeout 60 "$MONSOON" run "$WORK/job_test_misfit.yaml" --run-dir "$WORK/r4" >/dev/null 2>"$WORK/err4.txt"
expect_eq "a test set that does not fit the model: exit status" "$?" "2"
grep -q "model.input_dim is 1 but data.test (.*) has 2 features" "$WORK/err4.txt" \
  && pass "the test set's misfit is named before any role starts" \
  || fail "test misfit message: $(cat "$WORK/err4.txt")"
# CSV beyond one regression target: class labels (softmax_regression on 3 classes) and two
# regression targets; validate reads the data against the model.
python3 - "$WORK" <<'PY'
import random, sys
work = sys.argv[1]
random.seed(3)
centres = [(-2, 0), (2, 0), (0, 2.5)]
for split, n in (("train", 900), ("test", 300)):
    with open(f"{work}/classes_{split}.csv", "w") as f:
        f.write("x0,x1,label\n")
        for i in range(n):
            c = i % 3
            f.write(f"{centres[c][0] + random.gauss(0, 0.5):.4f},{centres[c][1] + random.gauss(0, 0.5):.4f},{c}\n")
    with open(f"{work}/two_{split}.csv", "w") as f:
        f.write("x,y0,y1\n")
        for i in range(n):
            x = random.uniform(-1, 1)
            f.write(f"{x:.5f},{2 * x + 1:.5f},{-x:.5f}\n")
PY
cat >"$WORK/classes.yaml" <<YAML
job: csv_classes
cluster: {servers: 1, workers: 2, evaluator: true}
model: {type: softmax_regression, input_dim: 2, output_dim: 3}
data: {format: csv, train: classes_train.csv, test: classes_test.csv}
training: {algorithm: downpour, epochs: 20, batch_size: 30, timeout_seconds: 120}
optimizer: {type: sgd, learning_rate: 0.1}
YAML
timeout 120 "$MONSOON" run "$WORK/classes.yaml" --run-dir "$WORK/classes" >"$WORK/classes.txt" 2>&1
expect_eq "CSV classification job exits" "$?" "0"
acc=$(json_get "$WORK/classes/summary.json" final_test_accuracy)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.95 else 1)" "$acc" \
  && pass "CSV class labels: test accuracy $acc >= 0.95" || fail "CSV class labels: accuracy $acc"
sed -e 's/classes_/two_/g' -e 's/softmax_regression, input_dim: 2, output_dim: 3/linear_regression, input_dim: 1, output_dim: 2/' \
  -e 's/learning_rate: 0.1/learning_rate: 0.05/' "$WORK/classes.yaml" >"$WORK/two.yaml"
timeout 120 "$MONSOON" run "$WORK/two.yaml" --run-dir "$WORK/two" --set training.epochs=100 >"$WORK/two.txt" 2>&1
expect_eq "CSV two-target regression exits" "$?" "0"
python3 - "$WORK/two/summary.json" <<'PY'
import json, sys
p = {t["name"]: t["values"] for t in json.load(open(sys.argv[1]))["parameters"]}
w, b = p["dense0.weight"], p["dense0.bias"]
print("two targets: weights", [round(v, 3) for v in w], "biases", [round(v, 3) for v in b])
sys.exit(0 if abs(w[0] - 2) < 0.02 and abs(w[1] + 1) < 0.02 and abs(b[0] - 1) < 0.02 and abs(b[1]) < 0.02 else 1)
PY
expect_eq "both targets fit (y0 = 2x + 1, y1 = -x)" "$?" "0"
sed '3s/,1$/,1.5/' "$WORK/classes_train.csv" >"$WORK/classes_bad.csv"
expect_config_error "a class label that is not an integer" \
  "classes_bad.csv:3: column 3 is the class label, '1.5'; class labels are integers 0, 1, 2, ..." \
  validate "$WORK/classes.yaml" --set data.train=classes_bad.csv
expect_config_error "validate checks the data against the model" \
  "model.input_dim is 3 but data.train ($WORK/classes_train.csv) has 2 features per example" \
  validate "$WORK/classes.yaml" --set model.input_dim=3
expect_config_error "more classes in the data than the model has" \
  "model.output_dim is 2 but data.train ($WORK/classes_train.csv) has 3 classes (labels 0 to 2)" \
  validate "$WORK/classes.yaml" --set model.output_dim=2
timeout 60 "$MONSOON" run "$WORK/classes.yaml" --run-dir "$WORK/r5" --set model.output_dim=2 \
  >/dev/null 2>"$WORK/err5.txt"
expect_eq "more classes than the model has, run: exit status" "$?" "2"
grep -qF "model.output_dim is 2 but data.train ($WORK/classes_train.csv) has 3 classes" \
  "$WORK/err5.txt" && [ ! -e "$WORK/r5/logs" ] \
  && pass "run names the classes before any role starts" || fail "run: $(cat "$WORK/err5.txt")"
# The same data through a model written as a list of layers.
timeout 120 "$MONSOON" run "$WORK/classes.yaml" --run-dir "$WORK/classes_layers" \
  --set model.type=layers --set 'model.layers=[dense: {units: 16}, tanh, dense: {units: 3}]' \
  >"$WORK/classes_layers.txt" 2>&1
expect_eq "a layer-list model's job exits" "$?" "0"
acc=$(json_get "$WORK/classes_layers/summary.json" final_test_accuracy)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.95 else 1)" "$acc" \
  && pass "layer-list model: test accuracy $acc >= 0.95" || fail "layer-list model: accuracy $acc"
expect_config_error "a layer that does not fit its input" \
  "model.layers[1] (dense): takes a flat input, got (2, 1); put a flatten before it" \
  validate "$WORK/classes.yaml" --set model.type=layers --set 'model.input_shape=[2, 1]' \
  --set 'model.layers=[tanh, dense: {units: 3}]'
expect_config_error "a study given as a job" "this is a study file, not a job: run it with \`monsoon compare\`" \
  validate configs/compare_fmnist.yaml
# A model that cannot fit the host (1,000,000 filters: 1 TB of activations per worker at batch
# 64) is refused by validate and run before any role starts, naming its largest layer.
cat >"$WORK/huge.yaml" <<YAML
cluster: {servers: 2, workers: 1, evaluator: false}
model:
  type: layers
  output_dim: 10
  layers: [conv2d: {filters: 1000000, kernel: 3}, flatten, dense: {units: 10}]
data:
  train_images: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
  train_labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz
YAML
expect_config_error "a model beyond the host's memory: validate" \
  "the job's roles on this host need 1255.27 GB of memory, more than" \
  validate "$WORK/huge.yaml"
expect_config_error "a model beyond the host's memory: run" \
  "the largest part is the worker's activations at batch 64 (the largest layer is conv0 (conv2d): 10000000 parameters and 676000000 values per example" \
  run "$WORK/huge.yaml" --run-dir "$WORK/huge"
[ ! -e "$WORK/huge/logs" ] && pass "no role started" || fail "roles started: $(ls "$WORK/huge/logs")"
grep -q "^#   worker x 2 " <("$MONSOON" validate configs/fmnist_downpour.yaml) \
  && pass "validate prints what each role needs" || fail "no memory table"
# Weights out of a run that has none yet, and of a run whose weights do not fit its model.
"$MONSOON" prepare "$WORK/classes.yaml" --run-dir "$WORK/unfinished" >/dev/null 2>&1
"$MONSOON" export --run-dir "$WORK/unfinished" >"$WORK/export.txt" 2>&1
expect_eq "export of an unfinished run: exit status" "$?" "1"
grep -q "no final weights in $WORK/unfinished" "$WORK/export.txt" && pass "export says why" \
  || fail "export: $(cat "$WORK/export.txt")"
head -c 12 "$WORK/classes_layers/params.bin" >"$WORK/unfinished/params.bin"
"$MONSOON" export --run-dir "$WORK/unfinished" >"$WORK/export.txt" 2>&1
grep -q "params.bin holds 12 bytes, not the 36 of 9 float32 parameters" "$WORK/export.txt" \
  && pass "export refuses weights of the wrong size" || fail "export: $(cat "$WORK/export.txt")"
test -e "$WORK/unfinished/params.npz" && fail "export wrote a file anyway" || pass "nothing written"
finish
