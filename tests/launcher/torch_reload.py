#!/usr/bin/python3
"""Reloads a finished Fashion-MNIST run's exported weights (`monsoon export`:
RUN_DIR/params.npz) into the same network in PyTorch and scores it on the run's test set:
prints the accuracy and exits 0 when it is the evaluator's (summary.json's
final_test_accuracy) within 0.002.

    torch_reload.py RUN_DIR mlp|cnn|layers
    torch_reload.py RUN_DIR program SCRIPT.py

`layers`: the network is built in PyTorch from the run's model.layers (RUN_DIR/config.yaml);
batchnorm layers get their running statistics from the exported state.
`program`: the run trained SCRIPT.py's make_model() (a worker program); its final flat weights
(monsoon.load_params), buffers included, go into that model with monsoon.torch.load_state.

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
import yaml
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from pytorch_cnn_bench import network as cnn_network  # noqa: E402  the same CNN

def test_set(run_dir):
    """The run's test split (its config.yaml's data.test_images and test_labels, IDX)."""
    data = yaml.safe_load(open(f"{run_dir}/config.yaml"))["data"]
    with gzip.open(data["test_images"]) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28) / 255.0
    with gzip.open(data["test_labels"]) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y.astype(np.int64))


STATE = (".running_mean", ".running_var")


def load(net, params):
    """Monsoon's trained tensors in order onto the network's parameters, in order, and its
    state (batchnorm's running statistics) onto the BatchNorm modules' buffers, in order."""
    trained = [name for name in params.files if not name.endswith(STATE)]
    state = [name for name in params.files if name.endswith(STATE)]
    mine = list(net.parameters())
    assert len(trained) == len(mine), (params.files, [p.shape for p in mine])
    buffers = [
        b for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
        for b in (m.running_mean, m.running_var)
    ]
    assert len(state) == len(buffers), (state, len(buffers))
    with torch.no_grad():
        for name, b in zip(state, buffers):
            b.copy_(torch.tensor(params[name]))
        for name, p in zip(trained, mine):
            value = params[name]
            value = torch.tensor(value)
            if name.startswith("dense") and name.endswith(".weight"):
                value = value.T
            assert value.shape == p.shape, (name, value.shape, p.shape)
            p.copy_(value)


def same_padding(size, kernel, stride):
    """Monsoon's `same` padding of one axis: (before, after), the odd one after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class Residual(nn.Module):
    """A residual block: its layers plus the shortcut (identity or a 1x1 convolution)."""

    def __init__(self, body, projection):
        super().__init__()
        self.body = body
        self.projection = projection

    def forward(self, x):
        return self.body(x) + (x if self.projection is None else self.projection(x))


def build(layers, shape):
    """Monsoon's layer list on input `shape` as PyTorch modules; the output's shape."""
    modules = []
    for entry in layers:
        kind, settings = (entry, {}) if isinstance(entry, str) else next(iter(entry.items()))
        settings = settings or {}
        if kind == "conv2d":
            k, stride = settings["kernel"], settings.get("stride", 1)
            if settings.get("padding", "valid") == "same":
                top, bottom = same_padding(shape[1], k, stride)
                left, right = same_padding(shape[2], k, stride)
                modules.append(nn.ZeroPad2d((left, right, top, bottom)))
                shape = [shape[0], shape[1] + top + bottom, shape[2] + left + right]
            modules.append(nn.Conv2d(shape[0], settings["filters"], k, stride))
            shape = [settings["filters"], (shape[1] - k) // stride + 1, (shape[2] - k) // stride + 1]
        elif kind == "residual":
            body, out = build(settings["layers"], shape)
            projection = None
            if settings.get("shortcut", "identity") == "projection":
                stride = -(-shape[1] // out[1])
                projection = nn.Conv2d(shape[0], out[0], 1, stride)
            modules.append(Residual(body, projection))
            shape = out
        elif kind == "batchnorm":
            norm = nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d
            modules.append(norm(shape[0], eps=float(settings.get("epsilon", 1e-5))))
        elif kind == "maxpool2d":
            size = settings["size"]
            stride = settings.get("stride", size)
            modules.append(nn.MaxPool2d(size, stride))
            shape = [shape[0], (shape[1] - size) // stride + 1, (shape[2] - size) // stride + 1]
        elif kind == "globalavgpool2d":
            modules += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
            shape = [shape[0]]
        elif kind == "flatten":
            modules.append(nn.Flatten())
            shape = [int(np.prod(shape))]
        elif kind == "dense":
            modules.append(nn.Linear(shape[0], settings["units"]))
            shape = [settings["units"]]
        else:
            modules.append({"relu": nn.ReLU, "tanh": nn.Tanh}[kind]())
    return nn.Sequential(*modules), shape


def layer_list_model(run_dir):
    """The run's model.layers as a PyTorch network, in Monsoon's parameter order."""
    import yaml

    model = yaml.safe_load(open(f"{run_dir}/config.yaml"))["model"]
    return build(model["layers"], list(model["input_shape"]))[0]


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
    elif kind == "layers":
        net = layer_list_model(run_dir)
        load(net, np.load(f"{run_dir}/params.npz"))
    elif kind == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                            nn.ReLU(), nn.Linear(128, 10))
        load(net, np.load(f"{run_dir}/params.npz"))
    else:
        net = cnn_network()
        load(net, np.load(f"{run_dir}/params.npz"))
    x, y = test_set(run_dir)
    net.eval()
    torch.set_num_threads(os.cpu_count())  # the tests that call it run alone
    with torch.no_grad():  # in batches: one batch of 10,000 images takes a GB of activations
        correct = sum((net(xs).argmax(1) == ys).sum().item()
                      for xs, ys in zip(x.split(500), y.split(500)))
    accuracy = correct / len(y)
    expected = json.load(open(f"{run_dir}/summary.json"))["final_test_accuracy"]
    print(f"PyTorch with the exported weights: test accuracy {accuracy:.4f}; evaluator {expected:.4f}")
    sys.exit(0 if abs(accuracy - expected) <= 0.002 else 1)


if __name__ == "__main__":
    main()
