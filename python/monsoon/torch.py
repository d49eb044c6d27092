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
servers' weights on the test set. A module's buffers (BatchNorm's running statistics) are its
state: they follow the parameters in the flat vector, workers send their values with each push,
and the servers keep them (README "Model state").
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
    arrays ``params`` and ``grads``, followed by its buffers (BatchNorm's running statistics,
    ``num_batches_tracked``, ...) as model state: what monsoon.run_role drives. Before each
    batch the buffers take the state's values; after a training batch both arrays' state holds
    the buffers' new values, which the worker sends to the servers."""

    def __init__(self, module, job, loss):
        self.module = module
        self.input_shape = tuple(job["input_shape"])
        self.classify = job["classification"]
        self.loss = loss or default_loss(job)
        tensors = _trained(module)
        self.buffers = list(module.buffers())
        size = sum(p.numel() for p in tensors)
        self.num_state = sum(b.numel() for b in self.buffers)
        self.params = np.empty(size + self.num_state, dtype=np.float32)
        self.grads = np.zeros(size + self.num_state, dtype=np.float32)
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
        self.state = flat_params[size:]
        self._store_state()

    def _load_state(self):
        _copy_into(self.buffers, self.state)

    def _store_state(self):
        if self.num_state:
            self.state.copy_(torch.cat([b.detach().reshape(-1).float() for b in self.buffers]))
            self.grads[-self.num_state :] = self.params[-self.num_state :]

    def _batch(self, x, y):
        features = torch.from_numpy(x).view(-1, *self.input_shape)
        targets = torch.from_numpy(y)
        return features, targets.long() if self.classify else targets

    def compute_gradients(self, x, y, seed):
        torch.manual_seed(seed)
        self.grads.fill(0)
        self._load_state()
        features, targets = self._batch(x, y)
        self.module.train()
        loss = self.loss(self.module(features), targets)
        loss.backward()
        self._store_state()
        return float(loss) * len(x)

    def evaluate(self, x, y):
        self._load_state()
        features, targets = self._batch(x, y)
        self.module.eval()
        with torch.no_grad():
            output = self.module(features)
            loss_sum = float(self.loss(output, targets)) * len(x)
            correct = int((output.argmax(dim=1) == targets).sum()) if self.classify else 0
        return loss_sum, correct


def _trained(module):
    return [p for p in module.parameters() if p.requires_grad]


def _copy_into(tensors, flat):
    """Copies consecutive values of the flat tensor ``flat`` into ``tensors`` (any dtype)."""
    offset = 0
    with torch.no_grad():
        for t in tensors:
            n = t.numel()
            t.copy_(flat[offset : offset + n].view_as(t))
            offset += n


def flat_params(module):
    """The module's flat vector, as the servers hold it and ``monsoon.load_params`` returns it:
    its trainable parameters in ``parameters()`` order, then its buffers in ``buffers()`` order
    (its state), as one float32 array."""
    tensors = _trained(module) + list(module.buffers())
    return torch.cat([t.detach().reshape(-1).float() for t in tensors]).numpy()


def num_state(module):
    """How many values of ``flat_params(module)`` are its buffers."""
    return sum(b.numel() for b in module.buffers())


def load_state(module, params):
    """Copies a flat vector (``monsoon.load_params(run_dir)``) into the module's parameters and
    buffers. ValueError when the sizes differ."""
    tensors = _trained(module) + list(module.buffers())
    size = sum(t.numel() for t in tensors)
    if params.size != size:
        raise ValueError(
            f"{params.size} values for a model of {size} (parameters and buffers)"
        )
    _copy_into(tensors, torch.from_numpy(np.asarray(params, dtype=np.float32)))


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
        monsoon.write_initial_params(flat_params(module), num_state(module))
        return
    model = _FlatModule(module, job, loss)
    mine = (model.params.size - model.num_state, model.num_state)
    servers = (job["num_params"] - job["num_state"], job["num_state"])
    if mine != servers:
        raise monsoon.Error(
            f"the model has {mine[0]} parameters and {mine[1]} buffer values but the job's "
            f"servers hold {servers[0]} and {servers[1]} (made by the same program's first run; "
            "is make_model deterministic?)"
        )
    try:
        monsoon.run_role(model)
    except monsoon.Error as e:
        if e.exit_status != 1:
            print(f"monsoon: {e}", file=sys.stderr)
            sys.exit(e.exit_status)
        raise
