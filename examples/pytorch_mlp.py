"""A PyTorch MLP trained on Monsoon's parameter servers (README "Bring a PyTorch model").

Run it with its job file, which names it as the worker program:

    monsoon run examples/pytorch_mlp.yaml

The launcher starts this script for every worker and for the evaluator. Monsoon hands each
worker the batches of its shard of the job's data (examples shaped as model.input_shape) and
runs the job's algorithm; the script only says what the model is.
"""

import torch.nn as nn

import monsoon.torch


def make_model():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Linear(256, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


if __name__ == "__main__":
    monsoon.torch.run(make_model)
