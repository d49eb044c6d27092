#!/usr/bin/env bash
# Jobs on emulated hosts (network.hosts: namespaces; README "Emulated network"): every role in
# a network namespace of its own, its link rate-limited by tc tbf; servers bind their host's
# eth0. The job trains; the namespaces, their qdiscs and the roles are gone after it, after an
# interrupt and after the launcher is killed. Then the network study, shortened: EAMSGD on the
# CNN over 1 Gbit/s links, tau = 16 reaching the target accuracy sooner than tau = 1; and the
# nodes study, shortened: nodes of 2 workers pushing once send half the bytes and train
# faster. Needs root.
source tests/launcher/test_lib.sh

[ "$(id -u)" -eq 0 ] || skip "emulated hosts are network namespaces, which needs root"

# launched COMMAND...: runs COMMAND (a monsoon launcher) under `timeout` in the background;
# sets $launcher to monsoon's own PID, which names its hosts, and $watch to timeout's.
launched() {
  timeout 600 "$@" &
  watch=$!
  launcher=""
  for _ in $(seq 100); do
    launcher=$(pgrep -P "$watch" | head -1)
    [ -n "$launcher" ] && return 0
    sleep 0.05
  done
}

# left_by PID RUN_DIR: the namespaces and processes the launcher PID left behind (none,
# normally).
left_by() {
  ls /run/netns 2>/dev/null | grep "^monsoon-$1-" | xargs
  pgrep -f -- "--run-dir $2( |$)" | xargs
}

# 1. The linear job across 4 emulated hosts at 100 Mbit/s.
RUN="$WORK/linear"
launched "$MONSOON" run configs/linear_regression.yaml --run-dir "$RUN" \
  --set network.hosts=namespaces --set network.link_mbit=100 >"$WORK/out.txt" 2>&1
qdisc=""
for _ in $(seq 100); do
  qdisc=$(tc -n "monsoon-$launcher-server-0" qdisc show dev eth0 2>/dev/null | grep tbf)
  [ -n "$qdisc" ] && break
  sleep 0.1
done
wait "$watch"
expect_eq "linear job on emulated hosts: exit status" "$?" "0"
tail -2 "$WORK/out.txt"
echo "$qdisc" | grep -q "rate 100Mbit" && pass "server 0's link: $qdisc" \
  || fail "no 100 Mbit/s tbf on server 0's link: '$qdisc'"
grep -q "serving .* on 10\.203\.0\.1:" "$RUN/logs/server-0.log" \
  && pass "server 0 serves on its host's eth0: $(grep -o 'on 10\.203\.0\.1:[0-9]*' "$RUN/logs/server-0.log")" \
  || fail "server 0 is not on its emulated host: $(grep serving "$RUN/logs/server-0.log")"
fits_line "$RUN" && pass "the job learned the line" || fail "the fit"
expect_eq "nothing left after the job" "$(left_by "$launcher" "$RUN")" ""

# training RUN_DIR: the default job on emulated hosts, launched, until worker 0 has trained a
# few steps.
training() {
  RUN="$1"
  launched "$MONSOON" run configs/fmnist_downpour.yaml --run-dir "$RUN" \
    --set network.hosts=namespaces >"$RUN.txt" 2>&1
  for _ in $(seq 300); do [ "$(rows "$RUN/metrics/worker-0.csv")" -gt 5 ] && break; sleep 0.1; done
}

# 2. Interrupted (SIGINT once training runs): exit 130, nothing left.
training "$WORK/interrupted"
kill -INT "$launcher"
wait "$watch"
expect_eq "interrupted job's exit status" "$?" "130"
expect_eq "nothing left after the interrupt" "$(left_by "$launcher" "$RUN")" ""

# 3. The launcher killed (SIGKILL): its roles stop on their own; its namespaces stay until the
# next launcher removes them, since their owner is gone.
training "$WORK/killed"
kill -KILL "$launcher"
wait "$watch" 2>/dev/null
[ -n "$("$MONSOON" hosts list --owner "$launcher")" ] && pass "a killed launcher's hosts outlive it" \
  || fail "no namespaces of the killed launcher to remove"
"$MONSOON" hosts up probe --owner $$ >/dev/null
# A second `hosts up` for a live owner is refused, naming the hosts it has, which stay.
"$MONSOON" hosts up hx3 --owner $$ >"$WORK/second_up.txt" 2>&1
[ $? -ne 0 ] && grep -q "owner $$ already has hosts (.*monsoon-$$-probe" "$WORK/second_up.txt" \
  && pass "a second hosts up for one owner is refused, naming its hosts" \
  || fail "a second hosts up for one owner: $(cat "$WORK/second_up.txt")"
grep -q "monsoon-$$-probe" <<<"$("$MONSOON" hosts list --owner $$)" \
  && pass "... and the first hosts stay" || fail "the first hosts were removed"
"$MONSOON" hosts down --owner $$
for _ in $(seq 100); do [ -z "$(left_by "$launcher" "$RUN")" ] && break; sleep 0.1; done
expect_eq "the next launcher removed them and their roles" "$(left_by "$launcher" "$RUN")" ""

# 4. configs/compare_network.yaml shortened: its 1 Gbit/s half, tau 1 and 16, one epoch.
sed -e "s|^base: .*|base: $PWD/configs/fmnist_cnn.yaml|" \
  -e "s|^target_accuracy: .*|target_accuracy: 0.8|" \
  -e "s|training.epochs: 3,|training.epochs: 1,|" \
  -e "s|^  network.link_mbit: .*|  network.link_mbit: [1000]|" \
  -e "/name: tau4/,+1d" configs/compare_network.yaml >"$WORK/network.yaml"
launched "$MONSOON" compare "$WORK/network.yaml" --out "$WORK/study" >"$WORK/study.txt" 2>&1
wait "$watch"
expect_eq "network study exit status" "$?" "0"
grep -v '^\[' "$WORK/study.txt" | tail -4
cat "$WORK/study/compare.md"
python3 - "$WORK/study/compare.csv" <<'PY'
import csv, sys
rows = {r["variant"]: r for r in csv.DictReader(open(sys.argv[1]))}
assert list(rows) == ["tau1-link_mbit1000", "tau16-link_mbit1000"], list(rows)
# One short run each: times to target come in steps of the evaluation interval and can tie,
# so the check is on what the link limits: samples/s and the job's wall time.
s1, s16 = (float(rows[v]["samples_per_second"]) for v in rows)
w1, w16 = (float(rows[v]["wall_seconds"]) for v in rows)
print(f"at 1 Gbit/s: tau 1 {s1:.0f} samples/s, {w1:.1f} s; tau 16 {s16:.0f} samples/s, {w16:.1f} s")
sys.exit(0 if s16 >= 1.5 * s1 and w16 < w1 else 1)
PY
expect_eq "at 1 Gbit/s, tau 16 trains >= 1.5x as fast as tau 1 and ends sooner" "$?" "0"
expect_eq "nothing left after the study" "$(left_by "$launcher" "$WORK/study")" ""

# 5. configs/compare_nodes.yaml shortened: Downpour only, one epoch. 8 workers as 4 nodes of 2
# on 1 Gbit/s links: a node that pushes once sends half the bytes and trains faster.
sed -e "s|^base: .*|base: $PWD/configs/fmnist_downpour.yaml|" \
  -e "s|training.epochs: 10,|training.epochs: 1,|" \
  -e "s|^  training.algorithm: .*|  training.algorithm: [downpour]|" \
  configs/compare_nodes.yaml >"$WORK/nodes.yaml"
launched "$MONSOON" compare "$WORK/nodes.yaml" --out "$WORK/nodes" >"$WORK/nodes.txt" 2>&1
wait "$watch"
expect_eq "nodes study exit status" "$?" "0"
cat "$WORK/nodes/compare.md"
python3 - "$WORK/nodes/compare.csv" <<'PY'
import csv, sys
rows = {r["variant"]: r for r in csv.DictReader(open(sys.argv[1]))}
worker, node = rows["per-worker-algorithmdownpour"], rows["per-node-algorithmdownpour"]
sent = float(node["bytes_sent"]) / float(worker["bytes_sent"])
speed = float(node["samples_per_second"]) / float(worker["samples_per_second"])
print(f"per node against per worker: bytes sent {sent:.3f}x, samples/s {speed:.2f}x")
sys.exit(0 if sent <= 0.55 and speed >= 1.3 else 1)
PY
expect_eq "nodes of 2 on 1 Gbit/s: <= 0.55x the bytes, >= 1.3x the samples/s" "$?" "0"
expect_eq "nothing left after the nodes study" "$(left_by "$launcher" "$WORK/nodes")" ""
finish
