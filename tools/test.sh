#!/usr/bin/env bash
# Runs Monsoon's whole test suite from a checkout: installs the Debian packages it needs,
# builds every target (benchmarks included), runs every test under Bazel's hard time limits,
# and ends with its own line "N passed, N failed, N skipped" (one per test target).
#   tools/test.sh [--long]
# --long runs the long forms: full-length jobs where the default shortens them (the PyTorch
# examples' epochs, every value of the studies' sweeps), checking the same things.
set -uo pipefail
long=()
case "${1:-}" in
  "") ;;
  --long) long=(--test_env=MONSOON_LONG_TESTS=1) ;;
  *)
    echo "usage: tools/test.sh [--long]" >&2
    exit 2
    ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tools/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
bazel test --noshow_progress "${long[@]}" //... 2>&1 | tee "$log"
bazel_status=${PIPESTATUS[0]}

# A test that could not run its subject here (no GPU, not root) passes with a "SKIPPED: why"
# line in its log, or in each of its shards' logs (tests/launcher/test_lib.sh's skip): it counts
# as skipped, named here.
passed=0 skipped=0
for target in $(grep -E '^//[^ ]+ +(\(cached\) )?PASSED' "$log" | awk '{ print $1 }'); do
  logs="bazel-testlogs/${target#//}"
  logs="${logs/://}"
  reason=$(cat "$logs/test.log" "$logs"/shard_*/test.log 2>/dev/null | grep -m1 '^SKIPPED: ' \
    | cut -c10-)
  if [ -n "$reason" ]; then
    echo "skipped: $target: $reason"
    skipped=$((skipped + 1))
  else
    passed=$((passed + 1))
  fi
done
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log")
if [ "$bazel_status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1  # the build itself failed: count it so that the line never reads as success
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$bazel_status" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
