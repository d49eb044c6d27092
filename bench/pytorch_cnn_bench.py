#!/usr/bin/python3
"""PyTorch's side of the CNN comparisons: the training step of configs/fmnist_cnn.yaml's network
(conv 3x3x32 same, ReLU, max-pool 2, conv 3x3x64 same, ReLU, max-pool 2, dense 128, ReLU,
dense 10, softmax cross-entropy), or of configs/fmnist_resnet.yaml's ResNet, in PyTorch,
forward and backward to the gradients, as `compute_bench --model cnn|resnet` times Monsoon's.
Prints one JSON object like compute_bench's: each batch size's samples/s from its median step.

    bench/pytorch_cnn_bench.py [--model cnn|resnet] [--steps N] [--threads T]

Uses Debian's python3-torch (run with /usr/bin/python3).
"""
import argparse
import json
import statistics
import time

import torch
from torch import nn


def network():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


class Residual(nn.Module):
    """conv-batchnorm-ReLU-conv-batchnorm plus the input (or its 1x1 projection)."""

    def __init__(self, channels, filters, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, filters, 3, stride, padding=1), nn.BatchNorm2d(filters), nn.ReLU(),
            nn.Conv2d(filters, filters, 3, padding=1), nn.BatchNorm2d(filters))
        self.projection = nn.Conv2d(channels, filters, 1, stride) if stride > 1 else None

    def forward(self, x):
        return self.body(x) + (x if self.projection is None else self.projection(x))


def resnet():
    layers = [nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU()]
    channels = 16
    for filters in (16, 32, 64):
        for block in range(2):
            stride = 2 if block == 0 and filters > 16 else 1
            layers += [Residual(channels, filters, stride), nn.ReLU()]
            channels = filters
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def samples_per_second(net, batch, reps):
    x = torch.rand(batch, 1, 28, 28)
    y = torch.arange(batch) % 10

    def step():
        net.zero_grad(set_to_none=False)
        nn.functional.cross_entropy(net(x), y).backward()

    step()
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - start)
    return batch / statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200,
                        help="steps at batch 64 (fewer at larger batches, at least 10 or "
                             "STEPS), as compute_bench")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", choices=("cnn", "resnet"), default="cnn")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    net = resnet() if args.model == "resnet" else network()
    reps = {batch: max(min(10, args.steps), args.steps * 64 // batch) for batch in (64, 256)}
    results = [{"batch": batch,
                "step_samples_per_second": round(samples_per_second(net, batch, n))}
               for batch, n in reps.items()]
    print(json.dumps({"benchmark": f"pytorch_{args.model}", "torch": torch.__version__,
                      "mkldnn": torch.backends.mkldnn.is_available(), "threads": args.threads,
                      "results": results}, indent=1))


if __name__ == "__main__":
    main()
