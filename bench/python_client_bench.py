#!/usr/bin/python3
"""Push and pull of a 64 MiB tensor through the Python client (monsoon.Client) against Monsoon's
C++ client (transport_bench), measured in one run against the same kind of server: a
transport_bench parameter server process (SGD, 1 MiB chunks, 16 chunk calls in flight) on this
host, so both move the payloads through the shared segment it gives them (transport.local
auto; transport_bench's shm figures). Both clients are handed the gradient as raw memory, so
both scan it for NaN and infinity before each push (transport_bench --gradient raw), as
monsoon.Client must.
Repetitions come in rounds, each a block of Python's and then one of C++'s (transport_bench),
so that the machine's drift reaches both alike; each rate is the median of all its
repetitions. Prints one JSON object; ratio = Python / C++.

    python_client_bench.py TRANSPORT_BENCH [--mib 64] [--reps 20] [--rounds 5]

Needs the monsoon package on PYTHONPATH (bench/run_all.sh sets it).
"""

import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import monsoon

CHUNK_FLOATS = 1 << 18  # transport_bench's default --chunk-mib 1
TOKEN = "bench-token"  # bench/child_process.h's kBenchToken


def python_rates(transport_bench, floats, reps):
    """Pull and push goodput (GB/s) per repetition through monsoon.Client."""
    server = subprocess.Popen(
        [transport_bench, "--serve", str(floats), str(CHUNK_FLOATS)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        client = monsoon.Client([server.stdout.readline().strip()], floats, TOKEN, CHUNK_FLOATS)
        params = np.empty(floats, dtype=np.float32)
        gradient = np.ones(floats, dtype=np.float32)
        client.pull(params)  # warm-up
        client.push(gradient)
        gb = floats * 4 / 1e9
        pushes, pulls = [], []
        for _ in range(reps):
            start = time.perf_counter()
            client.push(gradient)
            pushes.append(gb / (time.perf_counter() - start))
            start = time.perf_counter()
            client.pull(params)
            pulls.append(gb / (time.perf_counter() - start))
        return pushes, pulls
    finally:
        server.stdin.close()
        server.wait(timeout=60)


def cpp_rates(transport_bench, mib, reps):
    """transport_bench's shared-memory push and pull goodput (GB/s, medians) for `mib`."""
    out = subprocess.run([transport_bench, "--sizes", str(mib), "--reps", str(reps),
                          "--gradient", "raw"],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    result = json.loads(out)["results"][0]
    return result["shm_push_gbps"], result["shm_pull_gbps"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport_bench")
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--reps", type=int, default=20, help="repetitions of each client")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    floats = args.mib << 18
    per_round = max(1, args.reps // args.rounds)
    pushes, pulls, cpp_pushes, cpp_pulls = [], [], [], []
    for _ in range(args.rounds):
        more_pushes, more_pulls = python_rates(args.transport_bench, floats, per_round)
        pushes += more_pushes
        pulls += more_pulls
        cpp_push, cpp_pull = cpp_rates(args.transport_bench, args.mib, per_round)
        cpp_pushes.append(cpp_push)
        cpp_pulls.append(cpp_pull)
    push, pull = statistics.median(pushes), statistics.median(pulls)
    cpp_push, cpp_pull = statistics.median(cpp_pushes), statistics.median(cpp_pulls)
    print(json.dumps({
        "benchmark": "python_client", "mib": args.mib, "reps": len(pushes),
        "python_push_gbps": round(push, 3), "cpp_push_gbps": cpp_push,
        "push_ratio": round(push / cpp_push, 3),
        "python_pull_gbps": round(pull, 3), "cpp_pull_gbps": cpp_pull,
        "pull_ratio": round(pull / cpp_pull, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
