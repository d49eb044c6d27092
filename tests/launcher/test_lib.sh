# Shared helpers for Monsoon's shell tests (sourced). Run from Bazel's runfiles root.
set -uo pipefail

MONSOON="$PWD/launcher/monsoon"
WORK="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

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

finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
