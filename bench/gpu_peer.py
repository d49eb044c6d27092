#!/usr/bin/env python3
"""PyTorch on the same GPU as the yardstick for Monsoon's GPU workers.

Steps: the default MLP (784-256-128-10), configs/fmnist_cnn.yaml's CNN and
configs/fmnist_resnet.yaml's ResNet at batches 64, 256 and 1024, each a PyTorch training step as
a PyTorch user runs it (the batch already on the GPU; forward, cross-entropy, backward, the
momentum-SGD update), eager and replayed as one CUDA Graph, next to Monsoon's worker step from
gpu_bench's JSON (the batch's upload, forward, backward, the gradients' download).

Jobs: the default MLP job (12 epochs) and the CNN job (1 epoch) as a plain PyTorch loop with
Fashion-MNIST on the GPU (batch 64, momentum SGD 0.02 / 0.9, cosine schedule, as the configs),
its samples/s and test accuracy after each epoch, next to Monsoon's runs of the same configs:
samples/s, and each side's seconds to the lower of the two final test accuracies.

Prints one JSON object; without a CUDA PyTorch it prints {"skipped": reason} and exits 0.

    gpu_peer.py [--monsoon-bench FILE] [--monsoon-runs DIR] [--data DIR] [--quick]

FILE: gpu_bench's JSON; DIR (--monsoon-runs): holds gpu/ and gpu-cnn/, the run directories of
tests/launcher/gpu_job_test.sh; --data: Fashion-MNIST's four .gz files; --quick: fewer steps
and one epoch each (a smoke run).
"""
import argparse
import csv
import gzip
import json
import math
import os
import sys
import time

import numpy as np

try:
    import torch
    from torch import nn
except ImportError as missing:
    print(json.dumps({"benchmark": "gpu_peer", "skipped": f"no PyTorch ({missing})"}))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_cnn_bench import network as cnn, resnet  # noqa: E402

BATCHES = (64, 256, 1024)
# gpu_bench's key for each model's steps.
MONSOON_STEP_KEYS = {"mlp": "step", "cnn": "cnn_step", "resnet": "resnet_step"}


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


MODELS = {"mlp": mlp, "cnn": cnn, "resnet": resnet}


def step_fn(net, optimizer, x, y):
    def step():
        optimizer.zero_grad(set_to_none=False)
        nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
    return step


def graphed(step):
    """The step captured as one CUDA Graph (after warm-up on a side stream), as its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def samples_per_second(run, batch, reps):
    """Throughput of `reps` back-to-back calls of `run` after one warm-up call."""
    run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        run()
    torch.cuda.synchronize()
    return batch * reps / (time.perf_counter() - start)


def step_rows(monsoon_bench, quick):
    rows = []
    for name, make in MODELS.items():
        monsoon = {r["batch"]: r["step_samples_per_second"]
                   for r in monsoon_bench.get(MONSOON_STEP_KEYS[name], [])}
        for batch in BATCHES:
            torch.manual_seed(1)
            net = make().cuda()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
            x = torch.rand(batch, 1, 28, 28, device="cuda")
            y = torch.arange(batch, device="cuda") % 10
            step = step_fn(net, optimizer, x, y)
            reps = 20 if quick else max(20, 200 * 256 // batch)
            row = {"model": name, "batch": batch,
                   "eager": round(samples_per_second(step, batch, reps)),
                   "graphed": round(samples_per_second(graphed(step), batch, reps))}
            if batch in monsoon:
                row["monsoon"] = monsoon[batch]
                row["monsoon_vs_eager"] = round(monsoon[batch] / row["eager"], 3)
                row["monsoon_vs_graphed"] = round(monsoon[batch] / row["graphed"], 3)
            rows.append(row)
    return rows


def idx(path):
    """An IDX file's contents (gzip'd), as a numpy array of its shape."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(data_dir):
    """(train x, train y, test x, test y) on the GPU, pixels scaled to [0, 1] as Monsoon's."""
    def load(part):
        x = idx(os.path.join(data_dir, f"{part}-images-idx3-ubyte.gz"))
        y = idx(os.path.join(data_dir, f"{part}-labels-idx1-ubyte.gz"))
        return (torch.from_numpy(x.astype(np.float32) / 255).unsqueeze(1).cuda(),
                torch.from_numpy(y.astype(np.int64)).cuda())
    return load("train") + load("t10k")


def accuracy(net, x, y):
    net.eval()
    with torch.no_grad():
        correct = sum(int((net(x[i:i + 10000]).argmax(1) == y[i:i + 10000]).sum())
                      for i in range(0, len(x), 10000))
    net.train()
    return correct / len(x)


def pytorch_job(make, epochs, data):
    """A plain training loop: per epoch (seconds of training so far, test accuracy)."""
    train_x, train_y, test_x, test_y = data
    torch.manual_seed(1)
    net = make().cuda()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    steps_per_epoch = len(train_x) // 64
    total = epochs * steps_per_epoch
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    trained, curve = 0.0, []
    for _ in range(epochs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        order = torch.randperm(len(train_x), device="cuda")
        for s in range(steps_per_epoch):
            rows = order[s * 64:(s + 1) * 64]
            step_fn(net, optimizer, train_x[rows], train_y[rows])()
            schedule.step()
        torch.cuda.synchronize()
        trained += time.perf_counter() - start
        curve.append((round(trained, 3), accuracy(net, test_x, test_y)))
    return {"samples_per_second": round(epochs * steps_per_epoch * 64 / trained),
            "test_accuracy": curve[-1][1], "curve": curve}


def monsoon_job(run_dir):
    """A Monsoon run's samples/s, final test accuracy and (seconds, test accuracy) curve."""
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    rows = csv.DictReader(open(os.path.join(run_dir, "metrics", "evaluator.csv")))
    return {"samples_per_second": round(summary["samples_per_second"]),
            "test_accuracy": summary["final_test_accuracy"],
            "curve": [(float(r["wall_seconds"]), float(r["test_accuracy"])) for r in rows]}


def seconds_to(curve, target):
    return next((round(s, 2) for s, a in curve if a >= target), None)


def job_rows(monsoon_runs, data_dir, quick):
    data = fashion_mnist(data_dir)
    rows = []
    for name, make, epochs, run in (("mlp", mlp, 12, "gpu"), ("cnn", cnn, 1, "gpu-cnn")):
        row = {"model": name, "epochs": 1 if quick else epochs,
               "pytorch": pytorch_job(make, 1 if quick else epochs, data)}
        run_dir = os.path.join(monsoon_runs or "", run)
        if monsoon_runs and os.path.exists(os.path.join(run_dir, "summary.json")):
            row["monsoon"] = monsoon_job(run_dir)
            target = min(row["monsoon"]["test_accuracy"], row["pytorch"]["test_accuracy"])
            row["target_accuracy"] = target
            for side in ("monsoon", "pytorch"):
                row[side]["seconds_to_target"] = seconds_to(row[side].pop("curve"), target)
            row["monsoon_vs_pytorch_samples"] = round(
                row["monsoon"]["samples_per_second"] / row["pytorch"]["samples_per_second"], 3)
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monsoon-bench", help="gpu_bench's JSON output")
    parser.add_argument("--monsoon-runs", help="gpu_job_test.sh's run directories")
    default_data = next((d for d in ("data/fashion-mnist", "/usr/share/datasets/fashion-mnist")
                         if os.path.isdir(d)), "data/fashion-mnist")
    parser.add_argument("--data", default=default_data, help="Fashion-MNIST's .gz files")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few steps, 1 epoch")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"benchmark": "gpu_peer", "skipped": "PyTorch sees no CUDA device"}))
        return
    bench = json.load(open(args.monsoon_bench)) if args.monsoon_bench else {}
    # The same arithmetic as Monsoon's run: FP32, or TF32 where gpu_bench ran with
    # --precision tf32.
    tf32 = bench.get("precision") == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    print(json.dumps({"benchmark": "gpu_peer", "device": torch.cuda.get_device_name(),
                      "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "monsoon_precision": bench.get("precision"),
                      "step": step_rows(bench, args.quick),
                      "job": job_rows(args.monsoon_runs, args.data, args.quick)}, indent=1))


if __name__ == "__main__":
    main()
