#!/usr/bin/env bash
# A job under an unauthenticated flood (docs/reliability.md): the default job
# (configs/fmnist_downpour.yaml: 2 servers, 2 workers; no evaluator, 4 epochs) alone, then
# while each server is offered 1000 idle connections and takes, again and again, 20
# concurrent 60 MB pushes with a wrong token. Prints one JSON line a run: the job's samples/s,
# each server's peak RSS (from its log) and what the attack calls got.
#
#   bench/flood_bench.sh [OUT_DIR]     (needs bazel-bin/tests/launcher/oversize_client)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
monsoon="$root/bazel-bin/launcher/monsoon"
attacker="$root/bazel-bin/tests/launcher/oversize_client"
job=(run "$root/configs/fmnist_downpour.yaml" --set cluster.evaluator=false --set training.epochs=4)

# flood RUN LAUNCHER: for each server, 1000 idle connections, then rounds of 20 wrong-token
# 60 MB pushes while the job's launcher runs.
flood() {
  local run=$1 launcher=$2 j address
  for j in 0 1; do
    for _ in $(seq 200); do [ -s "$run/rendezvous/server-$j" ] && break; sleep 0.05; done
    address=$(cat "$run/rendezvous/server-$j")
    python3 -c '
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
held = []
for _ in range(1000):
    try:
        held.append(socket.create_connection((host, int(port)), timeout=2))
    except OSError:
        pass
time.sleep(600)
' "$address" >/dev/null 2>&1 &
    echo $! >>"$run.flooders"
    (while kill -0 "$launcher" 2>/dev/null; do
       "$attacker" "$address" 20 60 wrong-token-0123456789 >>"$run.attack-$j.txt" 2>&1 || true
     done) &
  done
}

for mode in alone flooded; do
  run="$out/$mode"
  "$monsoon" "${job[@]}" --run-dir "$run" >"$run.txt" 2>&1 &
  launcher=$!
  [ "$mode" = flooded ] && flood "$run" "$launcher"
  wait "$launcher"
  [ -f "$run.flooders" ] && xargs kill <"$run.flooders" 2>/dev/null || true
  wait 2>/dev/null || true
  samples=$(python3 -c "import json, sys; print(round(json.load(open(sys.argv[1]))['samples_per_second']))" "$run/summary.json")
  rss=$(grep -ho "peak RSS [0-9]* MiB" "$run"/logs/server-*.log | awk '{print $3}' | paste -sd, -)
  calls=$(cat "$run".attack-*.txt 2>/dev/null | grep -c "^call" || true)
  refused=$(cat "$run".attack-*.txt 2>/dev/null | grep -c "16 wrong job token" || true)
  echo "{\"run\": \"$mode\", \"samples_per_second\": $samples, \"server_peak_rss_mib\": [$rss], \"attack_calls\": $calls, \"refused_for_token\": $refused}"
done
