#!/usr/bin/env bash
# The default job (configs/fmnist_downpour.yaml) on Debian's Fashion-MNIST: >= 0.85 test
# accuracy within 3 minutes of wall time, as summary.json reports; its TensorBoard event files
# match its CSVs; its exported weights (monsoon export) give PyTorch the same accuracy.
source tests/launcher/test_lib.sh

timeout 240 "$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/fmnist" >"$WORK/out.txt" 2>&1
expect_eq "default job exit status" "$?" "0"
tail -2 "$WORK/out.txt"
acc=$(json_get "$WORK/fmnist/summary.json" final_test_accuracy)
wall=$(json_get "$WORK/fmnist/summary.json" wall_seconds)
echo "final_test_accuracy=$acc wall_seconds=$wall"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)" "$acc" \
  && pass "accuracy $acc >= 0.85" || fail "accuracy $acc < 0.85"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 180 else 1)" "$wall" \
  && pass "wall time ${wall}s <= 180" || fail "wall time ${wall}s > 180"
grep -q "chance level" "$WORK/out.txt" && fail "the default job warned of a collapse" \
  || pass "no collapse warning"
/usr/bin/python3 tests/launcher/tensorboard_check.py core/metrics/tensorboard_event.proto "$WORK/fmnist"
expect_eq "TensorBoard event files decode and match the CSVs" "$?" "0"
# The workers' learning_rate column follows the cosine schedule from 0.02 (optimizer.
# learning_rate over 12 epochs); comm_share is comm_seconds over wall_seconds.
python3 - "$WORK/fmnist/metrics/worker-0.csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    epoch, rate = float(r["epoch"]), float(r["learning_rate"])
    want = 0.02 * 0.5 * (1 + math.cos(math.pi * min(epoch, 12) / 12))
    assert abs(rate - want) <= 1e-6 + 1e-4 * want, (r["step"], epoch, rate, want)
    share = float(r["comm_seconds"]) / float(r["wall_seconds"])
    assert abs(float(r["comm_share"]) - share) < 1e-4 and 0 <= share <= 1, r
print(f"learning_rate {rows[0]['learning_rate']} .. {rows[-1]['learning_rate']}, comm_share {rows[-1]['comm_share']}")
PY
expect_eq "learning_rate and comm_share columns" "$?" "0"
# Weights out: the exported arrays give PyTorch the evaluator's accuracy.
"$MONSOON" export --run-dir "$WORK/fmnist" && tests/launcher/torch_reload.py "$WORK/fmnist" mlp
expect_eq "export, then the weights reloaded into PyTorch" "$?" "0"
finish
