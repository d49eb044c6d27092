"""Train a ``torch.nn.Module`` on Monsoon's parameter servers, in one of two ways.

``run(make_model)`` (monsoon_loop.py): the program has no training loop; Monsoon's worker runs
the job's algorithm and calls the module for each batch::

    import torch.nn as nn
    import monsoon.torch

    def make_model():
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    monsoon.torch.run(make_model)

``init(module)``, ``DistributedOptimizer`` and ``DistributedSampler`` (own_loop.py): the
program keeps its own loop, and Monsoon's worker runs beside it.

Both give the module the flat layout of flat_module.py, which ``flat_params``, ``manifest``,
``num_state`` and ``load_state`` read and write.
"""

from monsoon.torch.flat_module import default_loss, flat_params, load_state, manifest, num_state
from monsoon.torch.monsoon_loop import run
from monsoon.torch.own_loop import DistributedOptimizer, DistributedSampler, finish, init

__all__ = [
    "DistributedOptimizer",
    "DistributedSampler",
    "default_loss",
    "finish",
    "flat_params",
    "init",
    "load_state",
    "manifest",
    "num_state",
    "run",
]
