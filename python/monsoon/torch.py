"""Train a ``torch.nn.Module`` on Monsoon's parameter servers.

A worker program calls ``run(make_model)`` once; everything else is the job file's::

    import torch.nn as nn
    import monsoon.torch

    def make_model():
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    monsoon.torch.run(make_model)

``run`` seeds PyTorch with the job's seed, gives it the job's ``compute.threads`` threads and
builds the model. Started by the launcher's
first run (before the servers), it hands the model's initial weights to the servers, so that
every algorithm starts from the model's own initialisation. As a worker it trains: Monsoon
hands it each batch of the worker's shard and takes its gradient; the parameters it trains are
views into one flat float32 vector, the layout the servers shard. As the evaluator it scores the
servers' weights on the test set.
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F

import monsoon


def default_loss(job):
    """The loss of the job's ``model.loss``, as a function (output, target) -> batch mean:
    cross-entropy of logits against class ids, or half the squared error per example."""
    if job["classification"]:
        return lambda output, target: F.cross_entropy(output, target.long())
    return lambda output, target: 0.5 * ((output - target) ** 2).sum(dim=1).mean()


class _FlatModule:
    """A module whose trainable parameters and gradients are views into the flat float32
    arrays ``params`` and ``grads``: what monsoon.run_role drives."""

    def __init__(self, module, job, loss):
        self.module = module
        self.input_shape = tuple(job["input_shape"])
        self.classify = job["classification"]
        self.loss = loss or default_loss(job)
        tensors = [p for p in module.parameters() if p.requires_grad]
        size = sum(p.numel() for p in tensors)
        self.params = np.empty(size, dtype=np.float32)
        self.grads = np.zeros(size, dtype=np.float32)
        flat_params = torch.from_numpy(self.params)
        flat_grads = torch.from_numpy(self.grads)
        offset = 0
        with torch.no_grad():
            for p in tensors:
                n = p.numel()
                flat_params[offset : offset + n].copy_(p.reshape(-1))
                p.data = flat_params[offset : offset + n].view_as(p)
                p.grad = flat_grads[offset : offset + n].view_as(p)
                offset += n

    def _batch(self, x, y):
        features = torch.from_numpy(x).view(-1, *self.input_shape)
        targets = torch.from_numpy(y)
        return features, targets.long() if self.classify else targets

    def compute_gradients(self, x, y, seed):
        torch.manual_seed(seed)
        self.grads.fill(0)
        features, targets = self._batch(x, y)
        self.module.train()
        loss = self.loss(self.module(features), targets)
        loss.backward()
        return float(loss) * len(x)

    def evaluate(self, x, y):
        features, targets = self._batch(x, y)
        self.module.eval()
        with torch.no_grad():
            output = self.module(features)
            loss_sum = float(self.loss(output, targets)) * len(x)
            correct = int((output.argmax(dim=1) == targets).sum()) if self.classify else 0
        return loss_sum, correct


def flat_params(module):
    """The module's trainable parameters as one float32 array, in ``parameters()`` order: the
    flat layout of the servers and of ``monsoon.load_params``."""
    return np.concatenate(
        [p.detach().reshape(-1).numpy() for p in module.parameters() if p.requires_grad]
    ).astype(np.float32)


def load_state(module, params):
    """Copies flat weights (``monsoon.load_params(run_dir)``) into the module's parameters.
    ValueError when the sizes differ."""
    tensors = [p for p in module.parameters() if p.requires_grad]
    size = sum(p.numel() for p in tensors)
    if params.size != size:
        raise ValueError(f"{params.size} weights for a model of {size} parameters")
    offset = 0
    with torch.no_grad():
        for p in tensors:
            n = p.numel()
            p.copy_(torch.from_numpy(np.asarray(params[offset : offset + n])).view_as(p))
            offset += n


def run(make_model, loss=None):
    """Runs this process's role of the job that started it, with ``make_model()``'s module.

    ``loss(output, target)`` gives the batch-mean loss to train on (default: the job's
    ``model.loss``). Exits with the role's exit status when the servers stop answering or a
    stop signal arrives; raises monsoon.Error for Monsoon's errors and the model's own
    exceptions as they are.
    """
    job = monsoon.job()
    torch.manual_seed(job["seed"])
    torch.set_num_threads(job.get("threads", 1))  # the job's compute.threads; 1 for init
    module = make_model()
    if job["role"] == "init":
        monsoon.write_initial_params(flat_params(module))
        return
    model = _FlatModule(module, job, loss)
    if model.params.size != job["num_params"]:
        raise monsoon.Error(
            f"the model has {model.params.size} parameters but the job's servers hold "
            f"{job['num_params']} (made by the same program's first run; is make_model "
            "deterministic?)"
        )
    try:
        monsoon.run_role(model)
    except monsoon.Error as e:
        if e.exit_status != 1:
            print(f"monsoon: {e}", file=sys.stderr)
            sys.exit(e.exit_status)
        raise
