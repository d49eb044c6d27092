"""Monsoon's parameter servers for models written in Python.

A worker program named by a job's ``cluster.worker_program`` is started by the launcher for
every worker and for the evaluator. It builds its model and hands it to Monsoon, which runs the
role exactly as for its own models: the worker's data shard from the job's ``data`` section, the
algorithm of ``training.algorithm``, the gRPC client (chunking, retries, heartbeats, token and
TLS), metrics, trace and restarts. ``monsoon.torch`` does this for a ``torch.nn.Module``; see
README "Bring a PyTorch model".

    job()                      the job this process serves (role, index, seed, shapes, ...)
    run_role(model)            runs the role with a model object (see monsoon.torch)
    write_initial_params(a)    the model's initial flat weights, for the servers
    load_params(run_dir)       a finished run's final flat weights
    Client.from_job()          Monsoon's gRPC client, for pull, push and exchange by hand
    Error                      raised when a Monsoon call fails
"""

import faulthandler
import os
import signal

import numpy as np

from monsoon._monsoon import EXIT_STOPPED, Client, Error, job, run_role, write_initial_params

# A worker that stalls (reliability.stall_seconds, first_step_seconds) raises SIGUSR2 before it
# ends: every thread's Python stack goes to its log, saying where it was stuck.
if os.environ.get("MONSOON_ROLE") == "worker":
    faulthandler.register(signal.SIGUSR2, all_threads=True)

__all__ = [
    "EXIT_STOPPED",
    "Client",
    "Error",
    "job",
    "load_params",
    "run_role",
    "write_initial_params",
]


def load_params(run_dir):
    """The final weights of the finished run in ``run_dir``: one float32 array in the model's
    flat layout (for a PyTorch model, its parameters in ``parameters()`` order, then its buffers; see
    ``monsoon.torch.load_state``)."""
    path = os.path.join(run_dir, "params.bin")
    if not os.path.exists(path):
        raise Error(f"no final weights in {run_dir} ({path}): the job has not finished")
    return np.fromfile(path, dtype="<f4")
