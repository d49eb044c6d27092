#!/usr/bin/python3
"""A worker program (process_tree_test.sh): a straight-line fit in NumPy run by
monsoon.run_role, whose workers first start helpers that outlive them unless the launcher ends
them: a child (subprocess.Popen), one in a session of its own (setsid), one detached with
nohup, and one in a session of its own with an empty environment. Each helper is
`sleep TAG<k>` (TAG: $HELPER_TAG). $STEP_SLEEP (seconds) slows each step. With $STEP_GATE (a
file), worker 0's fourth step waits for that file to exist (60 s at most)."""
import os
import subprocess
import sys
import time

import numpy as np
import monsoon


class Line:
    """y = m x + b; params [m, b]."""

    def __init__(self):
        self.params = np.zeros(2, np.float32)
        self.grads = np.zeros(2, np.float32)
        self.steps = 0

    def errors(self, x, y):
        return self.params[0] * x[:, 0] + self.params[1] - y.reshape(-1)

    def compute_gradients(self, x, y, seed):
        time.sleep(float(os.environ.get("STEP_SLEEP", "0")))
        self.steps += 1
        gate = os.environ.get("STEP_GATE")
        if gate and self.steps == 4 and os.environ["MONSOON_INDEX"] == "0":
            deadline = time.monotonic() + 60
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.05)
        err = self.errors(x, y)
        self.grads[:] = [np.mean(2 * err * x[:, 0]), np.mean(2 * err)]
        return float(np.sum(err * err))

    def evaluate(self, x, y):
        err = self.errors(x, y)
        return float(np.sum(err * err)), 0


job = monsoon.job()
if job["role"] == "init":
    monsoon.write_initial_params(np.zeros(2, np.float32))
    sys.exit(0)
if job["role"] == "worker":
    tag = os.environ["HELPER_TAG"]
    subprocess.Popen(["sleep", f"{tag}1"])
    os.system(f"setsid sleep {tag}2 &")
    os.system(f"nohup sleep {tag}3 >/dev/null 2>&1 &")
    subprocess.Popen(["sleep", f"{tag}4"], env={}, start_new_session=True)
try:
    monsoon.run_role(Line())
except monsoon.Error as e:  # a stop or a lost server ends the program with Monsoon's status
    print(f"monsoon: {e}", file=sys.stderr)
    sys.exit(e.exit_status)
