#!/usr/bin/env bash
# `monsoon compare configs/compare_fmnist.yaml` on Debian's Fashion-MNIST: all seven variants
# (sync, sync with a backup worker, Downpour tau 1 and 4, SSP, EASGD, EAMSGD) run, each reaches
# >= 0.84 test accuracy, the whole study takes under 15 minutes, the plot has every curve,
# and every variant's TensorBoard event files decode and match its CSVs (one
# `tensorboard --logdir STUDY` overlays the variants as runs). Shortened (the default), each
# variant trains 6 of its 12 epochs; the long form runs the study as shipped.
source tests/launcher/test_lib.sh

shortened=(--set training.epochs=6)
long_form && shortened=()
start=$(date +%s)
timeout 900 "$MONSOON" compare configs/compare_fmnist.yaml --out "$WORK/study" "${shortened[@]}" \
  >"$WORK/out.txt" 2>&1
expect_eq "compare exit status" "$?" "0"
elapsed=$(($(date +%s) - start))
grep -v '^\[' "$WORK/out.txt" | tail -9
cat "$WORK/study/compare.md"
[ "$elapsed" -lt 900 ] && pass "study took ${elapsed} s (< 15 min)" || fail "study took ${elapsed} s"
/usr/bin/python3 tests/launcher/tensorboard_check.py core/metrics/tensorboard_event.proto \
  "$WORK"/study/*/
expect_eq "every variant's event files match its CSVs" "$?" "0"
python3 - "$WORK/study" <<'PY'
import csv, sys, xml.dom.minidom
rows = {r["variant"]: r for r in csv.DictReader(open(f"{sys.argv[1]}/compare.csv"))}
expected = ["sync", "sync-backup", "downpour-tau1", "downpour-tau4", "ssp-s2", "easgd-tau4",
            "eamsgd-tau4"]
assert list(rows) == expected, list(rows)
for name, r in rows.items():
    acc = float(r["final_test_accuracy"])
    assert r["status"] == "ok" and acc >= 0.84, (name, r["status"], acc)
    assert r["seconds_to_target"] != "", name
# Synchronous variants have no stale fresh updates; asynchronous ones do.
assert float(rows["sync"]["mean_staleness"]) == 0, rows["sync"]
assert float(rows["downpour-tau1"]["mean_staleness"]) > 0, rows["downpour-tau1"]
svg = xml.dom.minidom.parse(f"{sys.argv[1]}/compare.svg")
lines = svg.getElementsByTagName("polyline")
assert len(lines) == 3 * len(expected), len(lines)  # time, epochs, GB sent
# Each panel has one curve per variant, with a point for each of its evaluations (how many
# depends on the machine's speed: evaluations come every 2 s).
for panel in range(3):
    for i, name in enumerate(expected):
        evaluations = sum(1 for _ in open(f"{sys.argv[1]}/{name}/metrics/evaluator.csv")) - 1
        points = len(lines[panel * len(expected) + i].getAttribute("points").split())
        assert points == evaluations >= 2, (panel, name, points, evaluations)
print("every variant >= 0.84:", {n: r["final_test_accuracy"] for n, r in rows.items()})
PY
expect_eq "compare.csv and compare.svg check out" "$?" "0"
finish
