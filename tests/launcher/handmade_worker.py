#!/usr/bin/python3
"""A worker program that uses monsoon.Client by hand (pytorch_job_test.sh): five pulls (each
waiting until every worker has pushed `step` times) and pushes of ones, or five elastic
exchanges under easgd, each followed by a metrics row; its initial weights are ten zeros."""
import sys
import numpy as np
import monsoon

job = monsoon.job()
if job["role"] == "init":
    monsoon.write_initial_params(np.zeros(10, dtype=np.float32))
    sys.exit(0)
client = monsoon.Client.from_job()
w = np.empty(client.num_params, dtype=np.float32)
d = np.empty_like(w)
for step in range(5):
    if job["algorithm"] == "easgd":
        client.exchange(w, d)
        w -= d
    else:
        client.pull(w, min_clock=step)
        client.push(np.ones_like(w))
    client.report(step + 1, loss=float(np.abs(w).sum()), samples=64, epoch=(step + 1) / 5)
client.finish()
print("handmade worker", job["index"], "done:", w[:3])
