"""A training loop of your own: ``init(module)``, ``DistributedOptimizer`` and
``DistributedSampler``, with Monsoon's worker on a thread beside the loop."""

import atexit
import os
import sys
import threading

import numpy as np
import torch

import monsoon
from monsoon.torch.flat_module import FlatModule, check_layout, flat_params, manifest, num_state
from monsoon.torch.flat_module import run_role, trained_parameters


class _OwnLoop:
    """Monsoon's worker loop (monsoon.run_role) on a thread of its own, trained by the user's
    loop: each batch the worker loop asks for, it waits for the user's next
    DistributedOptimizer.step(), whose gradient (and buffers) it then pushes as the job's
    algorithm says; it pulls, exchanges and moves the weights only while the user's thread
    waits in step(), so the module never changes under a forward pass."""

    own_loop = True  # PythonModel: the user's loop draws the batches and takes local steps

    def __init__(self, module, job):
        self._flat = FlatModule(module, job, None)
        check_layout(self._flat, job)
        self.params, self.grads, self.num_state = (
            self._flat.params, self._flat.grads, self._flat.num_state)
        flat_grads = torch.from_numpy(self.grads)
        self._grads = []  # (parameter, its slice of the flat gradient)
        offset = 0
        for p in trained_parameters(module):
            self._grads.append((p, flat_grads[offset : offset + p.numel()].view_as(p)))
            offset += p.numel()
        self.steps_done = 0  # the worker's steps before its current one (set by run_role)
        self.batch_size = job["batch_size"]
        self._short_batch = False  # the last training batch had fewer examples
        module.register_forward_pre_hook(self._check_batch)
        self._turn = "monsoon"  # whose turn it is: Monsoon's worker loop's, or the user's
        self._user_done = False
        self._user_error = None  # what ended the user's loop, when an exception did
        self._monsoon_done = False
        self._error = None
        self._loss = 0.0
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="monsoon worker", daemon=True)
        self._thread.start()
        self._wait_for_user_turn()  # the servers' weights are in the module

    def _run(self):
        try:
            monsoon.run_role(self)
        except BaseException as e:  # handed to the user's thread
            self._error = e
        with self._cv:
            self._monsoon_done = True
            self._turn = "user"
            self._cv.notify_all()

    def _check_batch(self, module, inputs):
        """Refuses training batches of another size than the job's ``training.batch_size`` (but
        a short one that ends an epoch): the worker counts samples, and a restarted worker's
        sampler skips what it trained, by that size."""
        if not module.training or not inputs or not torch.is_tensor(inputs[0]):
            return
        rows = inputs[0].shape[0] if inputs[0].dim() > 0 else 1
        if rows > self.batch_size or (rows < self.batch_size and self._short_batch):
            raise monsoon.Error(
                f"the training loop's batches have {rows} examples but the job's "
                f"training.batch_size is {self.batch_size}: make them the same (the worker "
                "counts samples, and resumes a restarted worker's data, by it)")
        self._short_batch = rows < self.batch_size

    def _wait_for_user_turn(self):
        with self._cv:
            self._cv.wait_for(lambda: self._turn == "user")
        if self._error is not None:
            raise self._error
        if self._monsoon_done and not self._user_done:
            raise monsoon.Error(
                "the job's worker has finished (training.max_steps) while the training loop "
                "goes on")

    def compute_gradients(self, x, y, seed):  # on Monsoon's thread
        self._flat._load_state()
        with self._cv:
            self._turn = "user"
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._turn == "monsoon" or self._user_done)
            if self._user_error is not None:
                e = self._user_error
                raise monsoon.Error(f"the training loop raised {type(e).__name__}: {e}")
            if self._user_done:
                return None
        return self._loss * len(x)

    def evaluate(self, x, y):
        return self._flat.evaluate(x, y)

    def _check_tensors(self):
        """Refuses a module whose tensors are no longer the ones init() laid out on the
        servers (one added, removed or replaced since): their weights would never reach the
        servers, and the evaluator would score a model without them."""
        module = self._flat.module
        trained = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        buffers = list(module.named_buffers())
        if len(trained) == len(self._grads) and len(buffers) == len(self._flat.buffers) and all(
                p is q for (_, p), (q, _) in zip(trained, self._grads)) and all(
                b is c for (_, b), c in zip(buffers, self._flat.buffers)):
            return
        known = {id(p) for p, _ in self._grads} | {id(b) for b in self._flat.buffers}
        new = [f"{name} {tuple(t.shape)}" for name, t in trained + buffers if id(t) not in known]
        what = (f"a tensor it did not have at monsoon.torch.init: {new[0]}" if new else
                "fewer tensors than it had at monsoon.torch.init")
        raise monsoon.Error(
            f"the module now has {what}; its weights would never reach the servers: build "
            "every layer before init(module)")

    def check_sampler(self, loader):
        """Refuses a training DataLoader that draws more examples per epoch than this worker's
        shard of its dataset (shuffle=True, or a sampler of its own, over the whole set)."""
        sampler = getattr(loader, "sampler", None)
        if isinstance(sampler, DistributedSampler) or not self._flat.module.training:
            return
        try:
            drawn, size = len(sampler), len(loader.dataset)
        except TypeError:  # an iterable dataset or sampler without a length
            return
        job = monsoon.job()
        shard = len(range(job["index"], size, job.get("workers", 1)))
        if drawn > shard:
            raise monsoon.Error(
                f"the training DataLoader draws {drawn} examples per epoch ({type(sampler).__name__}"
                f") but this worker's shard of its {size} is {shard}: give it "
                "sampler=monsoon.torch.DistributedSampler(dataset) (not shuffle=True), so that "
                "the workers train disjoint shards and a restarted worker skips what it trained")

    def step(self, loss):  # on the user's thread
        self._check_tensors()
        for p, flat in self._grads:
            if p.grad is None:
                flat.zero_()
            elif p.grad.data_ptr() != flat.data_ptr():
                flat.copy_(p.grad)
        self._flat._store_state()
        self._loss = 0.0 if loss is None else float(loss)
        with self._cv:
            self._turn = "monsoon"
            self._cv.notify_all()
        self._wait_for_user_turn()

    def finish(self, error=None):
        """Ends the worker once the user's loop has: on its own, or by `error` (an uncaught
        exception), which then ends the worker's role as its failure."""
        with self._cv:
            self._user_done = True
            self._user_error = error
            self._cv.notify_all()
        self._thread.join()
        if self._error is not None:
            raise self._error


_loop = None


def init(module, evaluate=None):
    """Joins the job that started this program with ``module``, for a training loop of your own.

    As the launcher's first run (before the servers) it writes the module's initial weights,
    and as the job's evaluator it scores the servers' weights with the module in ``eval()``
    mode: on the job's test data, or, where the job sets ``evaluation.by_program``, by
    ``evaluate(module)``, which returns (mean loss, accuracy) on data of its own; both roles
    then end the program. As a worker it starts Monsoon's worker (the job's algorithm, client,
    metrics and restarts) on a thread, loads the servers' weights into the module and returns:
    train with ``DistributedOptimizer`` and ``DistributedSampler``. The worker finishes when
    the program ends (or at ``finish()``).
    """
    global _loop
    job = monsoon.job()
    torch.set_num_threads(job.get("threads", 1))
    if job["role"] == "init":
        monsoon.write_initial_params(flat_params(module), num_state(module), manifest(module))
        sys.exit(0)
    if job["role"] == "evaluator":
        model = FlatModule(module, job, None)
        check_layout(model, job)
        if evaluate is not None:
            model.score = lambda: _score(model, evaluate)
            if not job["evaluation_by_program"]:
                print("monsoon: the evaluator scores the job's test data "
                      "(evaluation.by_program is false); the evaluate function is not used",
                      file=sys.stderr)
        run_role(model)
        sys.exit(0)
    _loop = _OwnLoop(module, job)
    atexit.register(_finish_at_exit)
    _watch_data_loaders()
    uncaught = sys.excepthook

    def note_uncaught(kind, value, traceback):
        """The program ends on an exception: the worker ends with it as the cause."""
        global _loop
        loop, _loop = _loop, None
        uncaught(kind, value, traceback)
        if loop is not None:
            try:
                loop.finish(value)
            except monsoon.Error as e:
                print(f"monsoon: {e}", file=sys.stderr)

    sys.excepthook = note_uncaught


def _watch_data_loaders():
    """Every DataLoader iterated from now on while the worker's module trains has its sampler
    checked against the worker's shard (_OwnLoop.check_sampler)."""
    loader = torch.utils.data.DataLoader
    if getattr(loader, "_monsoon_watched", False):
        return
    iterate = loader.__iter__

    def checked_iter(self):
        if _loop is not None:
            _loop.check_sampler(self)
        return iterate(self)

    loader.__iter__ = checked_iter
    loader._monsoon_watched = True


def _score(model, evaluate):
    """``evaluate(module)`` on the flat model's weights and buffers, in ``eval()`` mode without
    gradients: (mean loss, accuracy) as floats."""
    model._load_state()
    model.module.eval()
    with torch.no_grad():
        result = evaluate(model.module)
    try:
        loss, accuracy = result
        return float(loss), float(accuracy)
    except (TypeError, ValueError):
        raise monsoon.Error(
            f"the evaluate function given to monsoon.torch.init returned {result!r}; "
            "it must return (mean loss, accuracy)") from None


def finish():
    """Ends this worker's training: tells the servers it has finished. Raises monsoon.Error
    when the worker failed."""
    global _loop
    loop, _loop = _loop, None
    if loop is not None:
        loop.finish()


def _finish_at_exit():
    try:
        finish()
    except monsoon.Error as e:
        print(f"monsoon: {e}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(e.exit_status)


class DistributedOptimizer:
    """Wraps a ``torch.optim`` optimizer of the module given to ``init``: ``step()`` does what
    the job's algorithm says. Under downpour, sync and ssp it pushes the gradient (and takes
    the servers' weights, when the algorithm pulls them), and the servers' optimizer (the
    job's ``optimizer`` section) updates the weights: the wrapped optimizer takes no step.
    Under easgd and eamsgd the wrapped optimizer takes the local step, and every ``easgd.tau``
    steps the worker exchanges with the centre. ``step(loss=loss)`` puts the batch's loss in
    the worker's metrics."""

    def __init__(self, optimizer):
        if _loop is None:
            raise monsoon.Error(
                "monsoon.torch.init(module) must come before DistributedOptimizer(...): init "
                "starts this worker and loads the servers' weights into the module")
        self.optimizer = optimizer
        self._local = monsoon.job()["algorithm"] in ("easgd", "eamsgd")
        self._step = optimizer.step

        def refused(*args, **kwargs):
            raise monsoon.Error(
                "the loop called the wrapped optimizer's own step() (opt.optimizer.step()), "
                "which trains nothing on the servers: call the DistributedOptimizer's step()")

        # A learning-rate scheduler's mark on the step it counts (torch.optim.lr_scheduler).
        refused.__dict__.update(getattr(self._step, "__func__", self._step).__dict__)
        optimizer.step = refused

    def zero_grad(self, set_to_none=False):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None, loss=None):
        if _loop is None:
            raise monsoon.Error("monsoon.torch.init(module) must come before the first step")
        if self._local:
            result = self._step(closure)
            if loss is None and result is not None:
                loss = result
        _loop.step(loss)

    def __getattr__(self, name):  # param_groups, state_dict, ...
        return getattr(self.optimizer, name)


class DistributedSampler(torch.utils.data.Sampler):
    """This worker's shard of a map-style dataset: of one permutation of its indices (seeded
    by the job's seed and the epoch, ``set_epoch``), every W-th from the worker's index, so
    that the job's W workers draw disjoint shards, in a new order every epoch. A restarted
    worker's sampler skips what the worker had trained on before (its steps times the job's
    ``training.batch_size``, which the loop's batches must have), across as many epochs as that
    takes."""

    def __init__(self, dataset, shuffle=True):
        job = monsoon.job()
        self.size = len(dataset)
        self.shuffle = shuffle
        # The init run (before the servers) never draws from it.
        self.seed, self.index, self.workers = job["seed"], job["index"], job.get("workers", 1)
        self.epoch = 0
        self._skip = None  # examples still to skip (known once the worker has started)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        order = np.arange(self.size)
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(self.size)
        mine = order[self.index :: self.workers]
        if self._skip is None and _loop is not None:
            self._skip = _loop.steps_done * _loop.batch_size
        skipped = min(self._skip or 0, len(mine))
        if self._skip:
            self._skip -= skipped
        return iter(mine[skipped:].tolist())

    def __len__(self):
        return len(range(self.index, self.size, self.workers))
