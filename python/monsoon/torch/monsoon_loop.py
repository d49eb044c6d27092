"""``run(make_model)``: Monsoon's worker runs the job's loop and calls the module for each batch.

``run`` seeds PyTorch with the job's seed, gives it the job's ``compute.threads`` threads and
builds the model. Started by the launcher's first run (before the servers), it hands the
model's initial weights to the servers, so that every algorithm starts from the model's own
initialisation. As a worker it trains: Monsoon hands it each batch of the worker's shard and
takes its gradient on the flat layout (flat_module.py). As the evaluator it scores the servers'
weights on the test set.
"""

import torch

import monsoon
from monsoon.torch.flat_module import FlatModule, check_layout, flat_params, manifest, num_state
from monsoon.torch.flat_module import run_role


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
        monsoon.write_initial_params(flat_params(module), num_state(module), manifest(module))
        return
    model = FlatModule(module, job, loss)
    check_layout(model, job)
    run_role(model)
