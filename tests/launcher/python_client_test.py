#!/usr/bin/python3
"""monsoon.Client against a real parameter server process (transport_bench --serve: SGD with
learning rate 1e-6 over 1000 parameters): pull and push move the weights; bad use raises an
exception naming the problem and leaves the weights as they were; threads may share a client.
Exits 0 when every check passes.

    python_client_test.py TRANSPORT_BENCH
"""

import subprocess
import sys
import threading

import numpy as np

import monsoon

FLOATS, CHUNK = 1000, 256
failures = 0


def check(what, ok):
    global failures
    print(("PASS: " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1


def raises(what, error, text, call):
    try:
        call()
    except error as e:
        check(f"{what}: {type(e).__name__}: {e}", text in str(e))
        return
    check(f"{what}: nothing raised", False)


server = subprocess.Popen([sys.argv[1], "--serve", str(FLOATS), str(CHUNK)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
address = server.stdout.readline().strip()
raises("a wrong token", monsoon.Error, "token",
       lambda: monsoon.Client([address], FLOATS, "not-the-token", CHUNK))
client = monsoon.Client([address], FLOATS, "bench-token", CHUNK)
check("num_params", client.num_params == FLOATS)
before = np.empty(FLOATS, dtype=np.float32)
client.pull(before)
client.push(np.ones(FLOATS, dtype=np.float32))
after = np.empty(FLOATS, dtype=np.float32)
client.pull(after)
check("a push of ones moves every weight by -1e-6", np.allclose(after, before - 1e-6, atol=1e-9))

raises("a float64 gradient", ValueError, "gradient must be a float32 NumPy array",
       lambda: client.push(np.ones(FLOATS)))
raises("a gradient of the wrong size", ValueError,
       "gradient has 999 values; the servers hold 1000 parameters",
       lambda: client.push(np.ones(FLOATS - 1, dtype=np.float32)))
raises("a 2-D gradient", ValueError, "must be a writeable, contiguous 1-D array",
       lambda: client.push(np.ones((10, 100), dtype=np.float32)))
nan = np.ones(FLOATS, dtype=np.float32)
nan[7] = np.nan
raises("a NaN gradient", monsoon.Error, "the gradient is not finite at element 7 (nan); nothing was pushed",
       lambda: client.push(nan))
unchanged = np.empty(FLOATS, dtype=np.float32)
client.pull(unchanged)
check("the weights are unchanged after the refused pushes", np.array_equal(unchanged, after))
# Thread-safe: four threads push 25 times each and pull meanwhile; every push is numbered once
# (a repeated or skipped number would be refused), so the weights move by exactly 100 pushes.
errors = []


def pusher():
    mine = np.empty(FLOATS, dtype=np.float32)
    try:
        for _ in range(25):
            client.push(np.ones(FLOATS, dtype=np.float32))
            client.pull(mine)
    except Exception as e:  # noqa: BLE001 - reported below
        errors.append(e)


threads = [threading.Thread(target=pusher) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=60)
check(f"four threads pushing on one client: no error ({errors})", not errors)
moved = np.empty(FLOATS, dtype=np.float32)
client.pull(moved)
check("... and every push applied once: the weights moved by 100 pushes",
      np.allclose(moved, unchanged - 100e-6, atol=1e-8))
client.finish()
raises("a pull after finish", monsoon.Error, "the client has finished",
       lambda: client.pull(unchanged))
server.stdin.close()
server.wait(timeout=30)
sys.exit(1 if failures else 0)
