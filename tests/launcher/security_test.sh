#!/usr/bin/env bash
# Nobody in: two jobs on one node (no port clash, no cross-talk: a worker of job A cannot
# talk to job B's servers), the job token from the environment, mutual TLS, and a server
# under attack: 8 concurrent unauthenticated 200 MB requests (its memory stays bounded) and
# thousands of idle connections (the job finishes).
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
pace 8  # job B outlives job A (40 epochs at full speed) and the foreign worker
# Job B's chunk calls go through gRPC, job A's through the shared segments.
timeout 120 "$MONSOON" run "$cfg" --run-dir "$B" "${paced[@]}" --set transport.local=grpc \
  >"$WORK/b.txt" 2>&1 &
job_b=$!
wait_for_file "$B/rendezvous/server-0"
timeout 60 "$MONSOON" run "$cfg" --run-dir "$A" --set training.epochs=40 >"$WORK/a.txt" 2>&1
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
# A key that is not the certificate's, or a file that is no certificate, is named as such,
# not reported as a server that cannot listen.
openssl genrsa -out "$T/other.key" 2048 2>/dev/null
timeout 60 "$MONSOON" run "$T/job.yaml" --run-dir "$T/wrong-key" --set security.tls_key=other.key \
  >"$WORK/wrong_key.txt" 2>&1
expect_eq "a job with the wrong TLS key exits" "$?" "1"
grep -q "security.tls_key: $T/other.key is not the key of the certificate in $T/job.crt" \
  "$WORK/wrong_key.txt" && pass "the wrong key is named" || fail "$(tail -3 "$WORK/wrong_key.txt")"
timeout 60 "$MONSOON" run "$T/job.yaml" --run-dir "$T/not-a-cert" \
  --set security.tls_cert=linear_train.csv >"$WORK/not_cert.txt" 2>&1
grep -q "security.tls_cert: $T/linear_train.csv holds no PEM certificate" "$WORK/not_cert.txt" \
  && pass "a file that is no certificate is named" || fail "$(tail -3 "$WORK/not_cert.txt")"
pace 8  # training outlasts the status call and the plaintext worker
timeout 60 "$MONSOON" run "$T/job.yaml" --run-dir "$T/run" "${paced[@]}" >"$WORK/tls.txt" 2>&1 &
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
expect_eq "a plaintext worker at a TLS server exits (3: the server did not answer it)" "$?" "3"
pass "refused: $(tail -1 "$P.txt")"
wait "$job_tls"
expect_eq "TLS job exit status" "$?" "0"
fits_line "$T/run" && pass "the TLS job fits the line" || fail "TLS job's fit"
# --- 8 concurrent unauthenticated 200 MB requests -----------------------------------------
# A push is refused for its missing token from the call's metadata, before its message is
# read, so the server buffers at most a flow-control window of each: its peak RSS grows by
# less than 40 MiB, a fifth of one request (the job's own growth included: 18 MiB in a CI run).
O="$WORK/oversize"
pace 20  # training outlasts the attack (5 s alone) several times over
timeout 120 "$MONSOON" run "$cfg" --run-dir "$O" "${paced[@]}" >"$O.txt" 2>&1 &
job_o=$!
wait_for_file "$O/rendezvous/server-0"
server_pid=$(pgrep -f "monsoon server --run-dir $O --index 0")
before=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
timeout 120 tests/launcher/oversize_client "$(cat "$O/rendezvous/server-0")" 8 200 >"$O.attack.txt" 2>&1
after=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
echo "attack: $(cut -d: -f2- "$O.attack.txt" | sort | uniq -c | tr '\n' ';')"
echo "server 0 peak RSS: $((before / 1024)) MiB before the attack, $((after / 1024)) MiB after"
expect_eq "attack calls refused for their token (of 8)" \
  "$(grep -c ': 16 missing job token' "$O.attack.txt")" "8"
[ "$after" -lt $((before + 40 * 1024)) ] \
  && pass "server memory grew by $(((after - before) / 1024)) MiB under 1.6 GB of requests" \
  || fail "server peak RSS grew from $((before / 1024)) to $((after / 1024)) MiB under 8 x 200 MB"
wait "$job_o"
expect_eq "the attacked job exits" "$?" "0"
fits_line "$O" && pass "the attacked job fits the line" || fail "the attacked job's fit"

# --- thousands of idle connections --------------------------------------------------------
# The job runs with 1024 descriptors; 3000 connections that never speak arrive. The server
# holds at most its cap (4 per client + 16: 28 here) and closes the rest on arrival, so its
# descriptors and checkpoints (every second) are untouched, and the job finishes.
F="$WORK/flood"
pace 15  # training outlasts the flood's 15 s
(ulimit -n 1024 && exec timeout 120 "$MONSOON" run "$cfg" --run-dir "$F" \
  "${paced[@]}" --set checkpoint.interval_seconds=1 >"$F.txt" 2>&1) &
job_f=$!
wait_for_file "$F/rendezvous/server-0"
server_pid=$(pgrep -f "monsoon server --run-dir $F --index 0")
python3 -c '
import os, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
conns = []
for _ in range(3000):
    try:
        conns.append(socket.create_connection((host, int(port)), timeout=2))
    except OSError:
        pass
time.sleep(1)
print(f"opened {len(conns)} idle connections; the server holds {len(os.listdir(sys.argv[2]))} descriptors", flush=True)
time.sleep(14)
' "$(cat "$F/rendezvous/server-0")" "/proc/$server_pid/fd" >"$F.flood.txt" &
flood=$!
wait "$job_f"
code=$?
expect_eq "the job under a connection flood exits" "$code" "0"
[ "$code" = 0 ] || tail -5 "$F.txt"
wait "$flood"
fits_line "$F" && pass "the flooded job fits the line" || fail "the flooded job's fit"
held=$(grep -o 'holds [0-9]*' "$F.flood.txt" | cut -d' ' -f2)
[ -n "$held" ] && [ "$held" -lt 200 ] && pass "$(cat "$F.flood.txt")" \
  || fail "the server's descriptors under the flood: $(cat "$F.flood.txt")"
refusal=$(grep -o 'refused [0-9]* connections over its cap of [0-9]*' "$F/logs/server-0.log" | tail -1)
[ -n "$refusal" ] && pass "the server named the flood: $refusal" \
  || fail "the server never named the flood: $(tail -3 "$F/logs/server-0.log")"

# The cap follows the job: 8 workers and the evaluator, each with 8 channels to every server
# (72 connections), run; the old cap (4 per client + 16: 52) refused worker 6. validate
# refuses a job whose servers' cap could not fit this host's open-file limit.
timeout 120 "$MONSOON" run "$cfg" --run-dir "$WORK/channels" --set cluster.workers=8 \
  --set transport.channels_per_server=8 --set transport.chunk_kib=64 --set training.epochs=4 \
  >"$WORK/channels.txt" 2>&1
expect_eq "8 workers with 8 channels each (72 connections a server): exit status" "$?" "0"
grep -q "over its cap" "$WORK/channels/logs/server-0.log" \
  && fail "a legitimate client was refused: $(grep "over its cap" "$WORK/channels/logs/server-0.log")" \
  || pass "no legitimate connection refused"
(ulimit -n 512 && exec "$MONSOON" validate "$cfg" --set cluster.workers=32 \
  --set transport.channels_per_server=8) >"$WORK/fds.txt" 2>&1
expect_eq "a cap past the open-file limit: validate's exit status" "$?" "2"
grep -q "each server may hold 544 connections (cluster.workers 32 and the evaluator, each with twice transport.channels_per_server 8, and 16 for tools), more than this host's 512 open files" \
  "$WORK/fds.txt" && pass "validate names the settings and the limit" || fail "fds: $(tail -2 "$WORK/fds.txt")"

# Exit records are the program's word, checked against what the launcher knows: a worker
# program that writes its own record, "finished" after 10 of its steps or a "stall" in words of
# its own, fails its job as the program's own claim, never as a server's fault.
cat >"$WORK/forger.py" <<'PY'
import os, sys
import numpy as np
import monsoon
if monsoon.job()["role"] == "init":
    monsoon.write_initial_params(np.zeros(10, dtype=np.float32))
    sys.exit(0)
client = monsoon.Client.from_job()
w = np.empty(client.num_params, dtype=np.float32)
for step in range(10):
    client.pull(w)
    client.push(np.ones_like(w))
    client.report(step + 1, loss=0.0, samples=64, epoch=(step + 1) / 100)
status, cause = {"finished": (0, "finished"), "stalled": (4, "stalled")}[os.environ["FORGE"]]
with open(os.environ["MONSOON_EXIT_RECORD"], "w") as record:
    record.write(f"{os.getpid()} {status} {cause} {os.environ['MONSOON_PROCESS_TREE']}\n"
                 "server-0 corrupted my weights (forged)")
os._exit(status)
PY
sed -e "s|  evaluator: true|  evaluator: false\n  worker_program: [python3, $WORK/forger.py]|" \
  -e "s|  type: linear_regression|  type: program\n  loss: mean_squared_error|" \
  -e "s|data/|$PWD/configs/data/|" "$cfg" >"$WORK/forger.yaml"
for forged in finished stalled; do
  FORGE=$forged timeout 120 "$MONSOON" run "$WORK/forger.yaml" \
    --run-dir "$WORK/forged-$forged" >"$WORK/forged-$forged.txt" 2>&1
  expect_eq "a forged '$forged' exit record: the job's exit status" "$?" "1"
done
grep -q "^monsoon: worker-[01] exited 0 with an exit record saying it finished, but server [01] has not heard it finish: the program's own claim, after 10 steps" \
  "$WORK/forged-finished.txt" && pass "a forged finish is named as the program's claim, with its steps" \
  || fail "forged finish: $(grep "^monsoon: worker" "$WORK/forged-finished.txt")"
grep -q "^monsoon: worker-[01] exited with status 4 and an exit record of a stall in words of its own (\"server-0 corrupted my weights (forged)\"): the program's own claim" \
  "$WORK/forged-stalled.txt" && ! grep -q "^monsoon: server-0 corrupted" "$WORK/forged-stalled.txt" \
  && pass "a forged stall is the program's claim, not a server's fault" \
  || fail "forged stall: $(grep "^monsoon: " "$WORK/forged-stalled.txt")"

echo "SCORECARD security: 2 jobs on one node without clash or cross-talk; wrong-token, plaintext-at-TLS and short-token clients refused; mutual TLS job completed; 8 unauthenticated 200 MB requests refused for their token, server 0 grew by $(((after - before) / 1024)) MiB and the job finished; 3000 idle connections against 1024 descriptors: the server held $held descriptors and the job finished"
finish
