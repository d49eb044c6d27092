"""A PyTorch CNN trained on Monsoon's parameter servers: the 2-convolution network of
configs/fmnist_cnn.yaml, written in PyTorch (README "Bring a PyTorch model").

    monsoon run examples/pytorch_cnn.yaml
"""

import torch.nn as nn

import monsoon.torch


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


if __name__ == "__main__":
    monsoon.torch.run(make_model)
