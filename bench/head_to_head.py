#!/usr/bin/python3
"""Monsoon's default MLP job against what a PyTorch user would run instead, on this machine.

    bench/head_to_head.py --monsoon bazel-bin/launcher/monsoon [--steps 1500] [--reps 3]

Four variants, the same net (configs/fmnist_downpour.yaml: MLP 784-256-128-10, ReLU, batch 64,
momentum SGD at 0.02 / 0.9, Fashion-MNIST), one thread per process, run in turn, REPS times:

- `pytorch`: a bare PyTorch process training the net alone;
- `monsoon_1x1`: `monsoon run` with 1 server and 1 worker (no evaluator);
- `monsoon_k2`: the same with 2 workers (Downpour, a pull and a push every step);
- `rpc_k2`: a PyTorch RPC parameter server (torch.distributed.rpc, TensorPipe) with 2 workers,
  each pulling the weights and pushing its gradient every step; the server applies the same
  momentum SGD.

Every variant's figure is samples/s over its training steps (process start and imports
excluded; Monsoon's from its summary.json, summed over workers). Prints one JSON object with
each variant's median and the ratios monsoon_1x1 / pytorch and monsoon_k2 / rpc_k2. Extra
`--set` settings go to both Monsoon variants (e.g. `--set transport.local=grpc`).

The PyTorch variants run on the BLAS kernels Monsoon's workers get (`monsoon devices`'s last
line; OPENBLAS_CORETYPE, which OpenBLAS reads only when it loads: the script re-executes itself
with it), so that the ratios compare the frameworks, not two kernel choices; run it with
OPENBLAS_CORETYPE set to choose both.

Uses Debian's python3-torch (run with /usr/bin/python3).
"""
import argparse
import gzip
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
from torch import nn

TRAIN_IMAGES = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
TRAIN_LABELS = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"
CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs",
                      "fmnist_downpour.yaml")
BATCH = 64
LEARNING_RATE = 0.02
MOMENTUM = 0.9
WARMUP_STEPS = 20


def network():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def load_training_set():
    with gzip.open(TRAIN_IMAGES) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(TRAIN_LABELS) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return (torch.from_numpy(images.astype(np.float32) / 255.0),
            torch.from_numpy(labels.astype(np.int64)))


def batches(images, labels, seed):
    """Endless shuffled batches of BATCH examples."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(labels), generator=generator)
        for start in range(0, len(order) - BATCH + 1, BATCH):
            index = order[start:start + BATCH]
            yield images[index], labels[index]


def bare_pytorch(steps):
    """Samples/s of one process training the net alone."""
    torch.set_num_threads(1)
    images, labels = load_training_set()
    model = network()
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    loss_fn = nn.CrossEntropyLoss()
    data = batches(images, labels, 1)
    for step in range(WARMUP_STEPS + steps):
        if step == WARMUP_STEPS:
            start = time.perf_counter()
        x, y = next(data)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    return steps * BATCH / (time.perf_counter() - start)


def monsoon(binary, workers, steps, sets):
    """Samples/s of `monsoon run` with 1 server and `workers` workers, from its summary."""
    with tempfile.TemporaryDirectory() as run_dir:
        command = [binary, "run", CONFIG, "--run-dir", os.path.join(run_dir, "run"), "--yes",
                   "--set", "cluster.servers=1", "--set", f"cluster.workers={workers}",
                   "--set", "cluster.evaluator=false", "--set", f"training.max_steps={steps}"]
        for setting in sets:
            command += ["--set", setting]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=600)
        with open(os.path.join(run_dir, "run", "summary.json")) as f:
            return json.load(f)["samples_per_second"]


# The RPC parameter server's state (in its own process).
_server = None


class _Server:
    def __init__(self):
        self.model = network()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LEARNING_RATE,
                                         momentum=MOMENTUM)
        self.lock = threading.Lock()

    def pull(self):
        with self.lock:
            return nn.utils.parameters_to_vector(self.model.parameters()).detach().clone()

    def push(self, gradient):
        with self.lock:
            offset = 0
            for p in self.model.parameters():
                p.grad = gradient[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
            self.optimizer.step()


def _pull():
    return _server.pull()


def _push(gradient):
    _server.push(gradient)


def _rpc_process(rank, world_size, port, steps, results):
    global _server
    torch.set_num_threads(1)
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}",
                                              num_worker_threads=4, rpc_timeout=120)
    if rank == 0:
        _server = _Server()
        rpc.init_rpc("ps", rank=0, world_size=world_size, rpc_backend_options=options)
        rpc.shutdown()
        return
    images, labels = load_training_set()
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world_size, rpc_backend_options=options)
    model = network()
    loss_fn = nn.CrossEntropyLoss()
    data = batches(images, labels, rank)
    for step in range(WARMUP_STEPS + steps):
        if step == WARMUP_STEPS:
            start = time.perf_counter()
        nn.utils.vector_to_parameters(rpc.rpc_sync("ps", _pull), model.parameters())
        x, y = next(data)
        model.zero_grad()
        loss_fn(model(x), y).backward()
        gradient = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        rpc.rpc_sync("ps", _push, args=(gradient,))
    results.put((start, time.perf_counter()))
    rpc.shutdown()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc_parameter_server(workers, steps):
    """Samples/s of `workers` workers of a PyTorch RPC parameter server, all steps over the
    span from the first worker's start to the last one's end."""
    context = mp.get_context("spawn")
    results = context.Queue()
    port = free_port()
    processes = [context.Process(target=_rpc_process,
                                 args=(rank, workers + 1, port, steps, results))
                 for rank in range(workers + 1)]
    for p in processes:
        p.start()
    spans = [results.get(timeout=600) for _ in range(workers)]
    for p in processes:
        p.join(timeout=60)
        if p.exitcode != 0:
            raise RuntimeError(f"an RPC process ended with {p.exitcode}")
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    return workers * steps * BATCH / (last - first)


def use_monsoons_blas_kernels(binary):
    """Re-executes this script on the OpenBLAS kernels `binary` runs on, unless chosen."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    devices = subprocess.run([binary, "devices"], stdout=subprocess.PIPE, text=True,
                             timeout=60).stdout
    kernels = re.search(r"^cpu: OpenBLAS (\S+) kernels$", devices, re.MULTILINE).group(1)
    os.environ["OPENBLAS_CORETYPE"] = kernels
    os.execv(sys.executable, [sys.executable] + sys.argv)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--monsoon", required=True, help="the monsoon binary")
    parser.add_argument("--steps", type=int, default=1500, help="training steps per worker")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], dest="sets",
                        help="a setting for both Monsoon variants")
    args = parser.parse_args()
    use_monsoons_blas_kernels(args.monsoon)
    variants = {
        "pytorch": lambda: bare_pytorch(args.steps),
        "monsoon_1x1": lambda: monsoon(args.monsoon, 1, args.steps, args.sets),
        "monsoon_k2": lambda: monsoon(args.monsoon, 2, args.steps, args.sets),
        "rpc_k2": lambda: rpc_parameter_server(2, args.steps),
    }
    samples = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, run in variants.items():
            samples[name].append(run())
    median = {name: statistics.median(values) for name, values in samples.items()}
    print(json.dumps({
        "benchmark": "head_to_head", "blas_kernels": os.environ["OPENBLAS_CORETYPE"],
        "steps": args.steps, "reps": args.reps, "sets": args.sets,
        "samples_per_second": samples,
        "median": median,
        "monsoon_1x1_vs_pytorch": median["monsoon_1x1"] / median["pytorch"],
        "monsoon_k2_vs_rpc_k2": median["monsoon_k2"] / median["rpc_k2"],
    }, indent=2))


if __name__ == "__main__":
    main()
