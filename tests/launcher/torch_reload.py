#!/usr/bin/python3
"""Reloads a finished Fashion-MNIST run's exported weights (`monsoon export`: RUN_DIR/params.npz)
into the same network in PyTorch and scores it on the test set: prints the accuracy and exits
0 when it is the evaluator's (summary.json's final_test_accuracy) within 0.002.

    torch_reload.py RUN_DIR mlp|cnn
    torch_reload.py RUN_DIR program SCRIPT.py

`program`: the run trained SCRIPT.py's make_model() (a worker program); its final flat weights
(monsoon.load_params) go into that model with monsoon.torch.load_state.

Monsoon's dense weights are [in, out] (y = x W): nn.Linear takes their transpose.
Convolution weights [filters, channels, kernel, kernel] and the channels-first flatten order
are PyTorch's own.
"""
import gzip
import json
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from pytorch_cnn_bench import network as cnn_network  # noqa: E402  the same CNN

FMNIST = "/usr/share/datasets/fashion-mnist"


def test_set():
    with gzip.open(f"{FMNIST}/t10k-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28) / 255.0
    with gzip.open(f"{FMNIST}/t10k-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y.astype(np.int64))


def load(net, params):
    """Monsoon's tensors in order onto the network's parameters, in order."""
    tensors = [params[name] for name in params.files]
    mine = list(net.parameters())
    assert len(tensors) == len(mine), (params.files, [p.shape for p in mine])
    with torch.no_grad():
        for name, value, p in zip(params.files, tensors, mine):
            value = torch.tensor(value)
            if name.startswith("dense") and name.endswith(".weight"):
                value = value.T
            assert value.shape == p.shape, (name, value.shape, p.shape)
            p.copy_(value)


def program_model(script, run_dir):
    """SCRIPT.py's make_model() with the run's final weights."""
    import importlib.util

    import monsoon
    import monsoon.torch

    spec = importlib.util.spec_from_file_location("worker_program", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = module.make_model()
    monsoon.torch.load_state(net, monsoon.load_params(run_dir))
    return net


def main():
    run_dir, kind = sys.argv[1], sys.argv[2]
    if kind == "program":
        net = program_model(sys.argv[3], run_dir)
    elif kind == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                            nn.ReLU(), nn.Linear(128, 10))
        load(net, np.load(f"{run_dir}/params.npz"))
    else:
        net = cnn_network()
        load(net, np.load(f"{run_dir}/params.npz"))
    x, y = test_set()
    with torch.no_grad():
        accuracy = (net.eval()(x).argmax(1) == y).float().mean().item()
    expected = json.load(open(f"{run_dir}/summary.json"))["final_test_accuracy"]
    print(f"PyTorch with the exported weights: test accuracy {accuracy:.4f}; evaluator {expected:.4f}")
    sys.exit(0 if abs(accuracy - expected) <= 0.002 else 1)


if __name__ == "__main__":
    main()
