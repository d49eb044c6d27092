#!/usr/bin/env bash
# Nobody in: two jobs on one node (no port clash, no cross-talk: a worker of job A cannot
# talk to job B's servers), the job token from the environment, and mutual TLS.
source tests/launcher/test_lib.sh

cfg=configs/linear_regression.yaml

# foreign_worker DIR CONFIG TOKEN_FILE SERVER_ADDRESS_FILE: runs worker 0 from a run
# directory made of these pieces (a client that does not belong to the server it reaches);
# its output goes to DIR.txt; returns its exit status.
foreign_worker() {
  mkdir -p "$1/rendezvous" "$1/metrics" "$1/logs"
  cp "$2" "$1/config.yaml"
  cp -p "$3" "$1/token"
  cp "$4" "$1/rendezvous/server-0"
  timeout 30 "$MONSOON" worker --run-dir "$1" --index 0 >"$1.txt" 2>&1
}

# --- two jobs at once ---------------------------------------------------------------------
A="$WORK/job-a"
B="$WORK/job-b"
timeout 120 "$MONSOON" run "$cfg" --run-dir "$B" --set training.epochs=1000 >"$WORK/b.txt" 2>&1 &
job_b=$!
wait_for_file "$B/rendezvous/server-0"
timeout 60 "$MONSOON" run "$cfg" --run-dir "$A" --set training.epochs=100 >"$WORK/a.txt" 2>&1
expect_eq "job A, beside job B, exit status" "$?" "0"
fits_line "$A" && pass "job A fits the line" || fail "job A's fit"
# A worker carrying job A's token, pointed at job B's server.
X="$WORK/a-at-b"
foreign_worker "$X" "$A/config.yaml" "$A/token" "$B/rendezvous/server-0"
expect_eq "a worker of job A at job B's server exits" "$?" "1"
grep -q "wrong job token" "$X.txt" && pass "refused: $(tail -1 "$X.txt")" \
  || fail "cross-talk not refused by token: $(cat "$X.txt")"
wait "$job_b"
expect_eq "job B exit status" "$?" "0"
fits_line "$B" && pass "job B fits the line, untouched by job A" || fail "job B's fit"
[ "$(cat "$A/rendezvous/server-0")" != "$(cat "$B/rendezvous/server-0")" ] \
  && pass "jobs A and B served on different ports" || fail "port clash"
expect_eq "token file mode" "$(stat -c %a "$A/token")" "600"

# --- the token from the environment -------------------------------------------------------
E="$WORK/env-token"
MONSOON_JOB_TOKEN=0123456789abcdef0123 timeout 60 "$MONSOON" run "$cfg" --run-dir "$E" \
  >"$WORK/env.txt" 2>&1
expect_eq "job with \$MONSOON_JOB_TOKEN exit status" "$?" "0"
[ ! -e "$E/token" ] && pass "no token file written when the environment holds it" \
  || fail "a token file was written"
MONSOON_JOB_TOKEN=short timeout 60 "$MONSOON" run "$cfg" --run-dir "$WORK/short" >"$WORK/short.txt" 2>&1
expect_eq "a short \$MONSOON_JOB_TOKEN exit status" "$?" "2"
grep -q "MONSOON_JOB_TOKEN holds a token of only 5 characters" "$WORK/short.txt" \
  && pass "short token refused: $(tail -1 "$WORK/short.txt")" || fail "$(cat "$WORK/short.txt")"
# An emptied token file is refused too: a server would otherwise admit an empty token.
"$MONSOON" prepare "$cfg" --run-dir "$WORK/empty-token" >/dev/null 2>&1
: >"$WORK/empty-token/token"
timeout 30 "$MONSOON" server --run-dir "$WORK/empty-token" --index 0 >"$WORK/empty.txt" 2>&1
expect_eq "a server with an empty token file: exit status" "$?" "1"
grep -q "token holds a token of only 0 characters; a job token needs at least 16" "$WORK/empty.txt" \
  && pass "empty token file refused: $(tail -1 "$WORK/empty.txt")" || fail "$(cat "$WORK/empty.txt")"

# --- mutual TLS ---------------------------------------------------------------------------
T="$WORK/tls"
mkdir -p "$T"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=monsoon" \
  -addext "subjectAltName=DNS:monsoon" -keyout "$T/job.key" -out "$T/job.crt" 2>/dev/null
cp configs/data/linear_*.csv "$T/"
sed -e "s#data/linear_#$T/linear_#" "$cfg" >"$T/job.yaml"
cat >>"$T/job.yaml" <<YAML
security:
  tls_cert: $T/job.crt
  tls_key: $T/job.key
  tls_ca: $T/job.crt
YAML
timeout 60 "$MONSOON" run "$T/job.yaml" --run-dir "$T/run" --set training.epochs=400 \
  >"$WORK/tls.txt" 2>&1 &
job_tls=$!
wait_for_file "$T/run/rendezvous/server-0"
grep -q "(TLS)" "$T/run/logs/server-0.log" && pass "the server serves TLS" || fail "no TLS"
# `monsoon status` asks the server over TLS with the job's certificate.
"$MONSOON" status --run-dir "$T/run" >"$WORK/tls_status.txt"
grep -q "^training running (server 0 at " "$WORK/tls_status.txt" \
  && pass "status over TLS: $(sed -n 2p "$WORK/tls_status.txt")" \
  || fail "status over TLS: $(cat "$WORK/tls_status.txt")"
# A plaintext client with the right token gets nowhere.
P="$WORK/plain-at-tls"
sed -e '/^security:/,/^[a-z]/{/tls_cert\|tls_key\|tls_ca/d}' \
  -e 's/rpc_timeout_seconds: .*/rpc_timeout_seconds: 5/' "$T/run/config.yaml" >"$WORK/plain.yaml"
foreign_worker "$P" "$WORK/plain.yaml" "$T/run/token" "$T/run/rendezvous/server-0"
expect_eq "a plaintext worker at a TLS server exits" "$?" "1"
pass "refused: $(tail -1 "$P.txt")"
wait "$job_tls"
expect_eq "TLS job exit status" "$?" "0"
fits_line "$T/run" && pass "the TLS job fits the line" || fail "TLS job's fit"
echo "SCORECARD security: 2 jobs on one node without clash or cross-talk; wrong-token, plaintext-at-TLS and short-token clients refused; mutual TLS job completed"
finish
