#!/usr/bin/env bash
# Studies and long runs (README "Comparing algorithms"): every shipped study runs to the end
# with exit 0 in its shortened form (training.max_steps, small copies of Fashion-MNIST; but in
# the long form each sweep cut to its first two values), and a variant that diverges is a
# result: a row "diverged at step N (simulated s T)" (or "(after T s)") in compare.csv, a
# cross on the plot, exit 0. A simulated run prints its progress and stops at training.timeout_seconds of real time;
# `monsoon run` asks for --yes before a job estimated at more than an hour.
# configs/compare_fmnist.yaml runs whole in fmnist_compare_test, configs/compare_network.yaml
# and configs/compare_nodes.yaml shortened in emulated_network_test (they need network
# namespaces).
source tests/launcher/test_lib.sh
FMNIST=/usr/share/datasets/fashion-mnist

# Fashion-MNIST's first 6000 training and 500 test images as plain IDX files: every study's
# variants read them in a fraction of the time the whole gzip'd set takes.
python3 - "$FMNIST" "$WORK" <<'PY'
import gzip, sys
src, out = sys.argv[1], sys.argv[2]
for prefix, rows in (("train", 6000), ("t10k", 500)):
    for kind, header in (("images", 16), ("labels", 8)):
        data = gzip.open(f"{src}/{prefix}-{kind}-idx{3 if kind == 'images' else 1}-ubyte.gz").read()
        head = bytearray(data[:header])
        head[4:8] = rows.to_bytes(4, "big")
        width = 784 if kind == "images" else 1
        open(f"{out}/{prefix}-{kind}", "wb").write(bytes(head) + data[header:header + rows * width])
PY
small=(--set "data.train_images=$WORK/train-images" --set "data.train_labels=$WORK/train-labels"
       --set "data.test_images=$WORK/t10k-images" --set "data.test_labels=$WORK/t10k-labels")

# shortened STUDY: configs/STUDY.yaml with its base job's path made absolute and, but in the
# long form, its sweep cut to its first two values; printed as the path of the copy.
shortened() {
  local copy="$WORK/$1.yaml"
  sed -e "s|^base: |base: $PWD/configs/|" configs/"$1".yaml >"$copy"
  if ! long_form; then
    sed -i -E 's/^(  [a-z_.]+: )\[([^],]+), ([^],]+)(, [^]]*)?\]$/\1[\2, \3]/' "$copy"
  fi
  echo "$copy"
}

for study in compare_fmnist_cnn compare_stragglers compare_scaling compare_scale_sim; do
  start=$(date +%s)
  timeout 600 "$MONSOON" compare "$(shortened "$study")" --out "$WORK/$study" \
    --set training.max_steps=3 --set evaluation.interval_seconds=600 "${small[@]}" \
    >"$WORK/$study.txt" 2>&1
  expect_eq "$study, shortened: exit status" "$?" "0"
  echo "  $study: $(($(date +%s) - start)) s; $(grep "^monsoon: compared" "$WORK/$study.txt")"
done

# Divergence is a result: the straight-line fit at learning rate 1000 diverges (a NaN
# gradient within about a dozen steps), simulated and by real processes.
cat >"$WORK/diverging.yaml" <<EOF
study: diverging
base: $PWD/configs/linear_regression.yaml
set: {training.epochs: 2}
variants:
  - name: fits
  - name: too-fast
    set: {optimizer.learning_rate: 1000}
sweep:
  simulation.enabled: [true, false]
EOF
timeout 300 "$MONSOON" compare "$WORK/diverging.yaml" --out "$WORK/diverging" >"$WORK/diverging.txt" 2>&1
expect_eq "a study whose variants diverge: exit status" "$?" "0"
python3 - "$WORK/diverging" <<'PY'
import csv, sys
rows = {r["variant"]: r for r in csv.DictReader(open(f"{sys.argv[1]}/compare.csv"))}
print({n: r["status"] for n, r in rows.items()})
for name, when in (("too-fast-enabledtrue", "(simulated s "), ("too-fast-enabledfalse", "(after ")):
    status = rows[name]["status"]
    assert status.startswith("diverged at step ") and when in status, (name, status)
    assert rows[name]["final_test_loss"] == "", rows[name]
for name in ("fits-enabledtrue", "fits-enabledfalse"):
    assert rows[name]["status"] == "ok" and float(rows[name]["final_test_loss"]) < 0.5, rows[name]
PY
expect_eq "diverged variants are rows of compare.csv, the others' figures kept" "$?" "0"
grep -q "&#215;" "$WORK/diverging/compare.svg" \
  && pass "a cross marks a divergence on the plot" || fail "no mark on the plot"
grep -q "too-fast-enabledfalse: diverged at step" "$WORK/diverging.txt" \
  && pass "the divergence is reported as such" || fail "$(grep too-fast "$WORK/diverging.txt")"

# A simulated run: progress lines, and training.timeout_seconds of real time.
start=$(date +%s)
timeout 120 "$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/sim-timeout" "${small[@]}" \
  --set simulation.enabled=true --set training.epochs=100000 --set training.timeout_seconds=8 \
  --yes >"$WORK/sim-timeout.txt" 2>&1
status=$?
elapsed=$(($(date +%s) - start))
expect_eq "a simulated run past training.timeout_seconds: exit status" "$status" "1"
grep -q "simulated job still running after 8 s of real time (training.timeout_seconds)" \
  "$WORK/sim-timeout.txt" && [ "$elapsed" -lt 30 ] \
  && pass "stopped after ${elapsed} s, naming training.timeout_seconds" \
  || fail "timeout: ${elapsed} s, $(tail -2 "$WORK/sim-timeout.txt")"
[ "$(grep -c "^\[ *[0-9.]*s\] simulated [0-9.]* s | epoch" "$WORK/sim-timeout.txt")" -ge 2 ] \
  && pass "the simulated run printed its progress" || fail "no progress: $(head -5 "$WORK/sim-timeout.txt")"

# `monsoon run` of a job estimated at more than an hour: refused without --yes, before any role.
"$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$WORK/long" --set training.epochs=100000 \
  >"$WORK/long.txt" 2>&1
expect_eq "a job estimated past an hour, without --yes: exit status" "$?" "2"
grep -q "this job would run about .* on this machine, more than an hour: pass --yes" "$WORK/long.txt" \
  && [ ! -e "$WORK/long/logs" ] && pass "refused before any role, saying --yes" \
  || fail "long: $(cat "$WORK/long.txt")"
finish
