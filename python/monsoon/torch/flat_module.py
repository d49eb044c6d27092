"""The flat layout both of ``monsoon.torch``'s APIs give a module: its trainable parameters and
their gradients as views into one float32 vector, the layout the servers shard, followed by its
buffers as model state (README "Model state"); and the checks that a module fits the job."""

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


class FlatModule:
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
        tensors = trained_parameters(module)
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
        copy_into(self.buffers, self.state)

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


def trained_parameters(module):
    return [p for p in module.parameters() if p.requires_grad]


def copy_into(tensors, flat):
    """Copies consecutive values of the flat tensor ``flat`` into ``tensors`` (any dtype),
    rounded to the nearest for integer tensors: the servers average a counter such as
    ``num_batches_tracked`` over the workers, and truncating the average's fraction would hold
    it back at every pull."""
    offset = 0
    with torch.no_grad():
        for t in tensors:
            n = t.numel()
            values = flat[offset : offset + n].view_as(t)
            t.copy_(values if t.is_floating_point() else values.round())
            offset += n


def flat_params(module):
    """The module's flat vector, as the servers hold it and ``monsoon.load_params`` returns it:
    its trainable parameters in ``parameters()`` order, then its buffers in ``buffers()`` order
    (its state), as one float32 array."""
    tensors = trained_parameters(module) + list(module.buffers())
    return torch.cat([t.detach().reshape(-1).float() for t in tensors]).numpy()


def manifest(module):
    """The module's tensors in the flat layout's order, one string each: its trainable
    parameters' names and shapes, then its buffers' (``"0.weight (10, 784)"``, ``"buffer
    1.running_mean (16,)"``)."""
    trained = [f"{name} {tuple(p.shape)}" for name, p in module.named_parameters()
               if p.requires_grad]
    return trained + [f"buffer {name} {tuple(b.shape)}" for name, b in module.named_buffers()]


def num_state(module):
    """How many values of ``flat_params(module)`` are its buffers."""
    return sum(b.numel() for b in module.buffers())


def load_state(module, params):
    """Copies a flat vector (``monsoon.load_params(run_dir)``) into the module's parameters and
    buffers. ValueError when the sizes differ."""
    tensors = trained_parameters(module) + list(module.buffers())
    size = sum(t.numel() for t in tensors)
    if params.size != size:
        raise ValueError(
            f"{params.size} values for a model of {size} (parameters and buffers)"
        )
    copy_into(tensors, torch.from_numpy(np.asarray(params, dtype=np.float32)))


def check_layout(model, job):
    """Refuses a flat model whose sizes, or tensors (names, shapes, order), differ from the
    layout the program's first run gave the servers (monsoon.job()'s ``manifest``)."""
    made = "(made by the same program's first run; is make_model deterministic?)"
    mine = (model.params.size - model.num_state, model.num_state)
    servers = (job["num_params"] - job["num_state"], job["num_state"])
    if mine != servers:
        raise monsoon.Error(
            f"the model has {mine[0]} parameters and {mine[1]} buffer values but the job's "
            f"servers hold {servers[0]} and {servers[1]} {made}"
        )
    theirs, ours = job.get("manifest", []), manifest(model.module)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            raise monsoon.Error(
                f"the model's tensor {i} is {a} but the job's servers hold {b} there {made}")
    if theirs and len(ours) != len(theirs):
        raise monsoon.Error(
            f"the model has {len(ours)} tensors but the job's servers hold {len(theirs)} {made}")


def run_role(model):
    """monsoon.run_role(model), ending the program with the role's exit status on Monsoon's
    errors but a plain failure (which raise)."""
    try:
        monsoon.run_role(model)
    except monsoon.Error as e:
        if e.exit_status != 1:
            print(f"monsoon: {e}", file=sys.stderr)
            sys.exit(e.exit_status)
        raise
