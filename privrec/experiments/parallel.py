"""Where a grid's runs train: one after another in this process, or as Ray tasks.

One code path for every parallel run (:func:`train_all`): ``--jobs N`` starts a Ray instance on
this machine with ``N x threads`` CPUs, ``--ray`` starts one with every core, ``--ray ADDRESS`` joins
a running cluster (``auto``: the one ``ray start`` made on this machine). Each run is one task that
requests ``threads`` CPUs and ``--gpus-per-run`` GPUs: runs that ask for a GPU land on GPU nodes and
train there, the others never touch a GPU. The driver records every finished run as today (``OUT.progress.jsonl``, written
by the driver alone); a task whose worker or node dies is retried by Ray and resumes from its last
per-epoch state in ``OUT.state/``, which is why the output must sit on storage every node mounts at the
same path (the driver's working directory included: a task starts there, so relative paths agree).
Each run is seeded on its own, so the numbers equal a one-process run's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from privrec.errors import ParameterError

Log = Callable[[str], None]
LOCAL = "local"                      # --ray without an address: a new Ray instance on this machine


@dataclass(frozen=True)
class RayTarget:
    """Where ``--ray`` sends the runs, and what each run asks of a node."""

    address: str = LOCAL             # "local": a new instance here; else a cluster's head (host:port, or auto)
    gpus: float = 0.0                # GPUs each run requests (> 0: runs land on GPU nodes and train there)

    def __post_init__(self) -> None:
        if not str(self.address).strip():
            raise ParameterError("--ray takes a cluster address (host:port, or auto); give none for a local instance")
        if not 0 <= self.gpus <= 64:
            raise ParameterError(f"--gpus-per-run must be between 0 and 64, got {self.gpus}")


@dataclass(frozen=True)
class Backend:
    """How a grid's pending runs are executed."""

    jobs: int = 1                    # runs at once on this machine (> 1: a local Ray instance of jobs x threads CPUs)
    threads: int = 1                 # torch threads per run, and the CPUs its task requests
    ray: RayTarget | None = None     # None: this machine (Ray only for jobs > 1)
    retries: int = 3                 # times Ray reruns a task whose worker or node died (it resumes from its state)

    def __post_init__(self) -> None:
        if self.jobs < 1 or self.threads < 1:
            raise ParameterError(f"jobs and threads must be >= 1, got {self.jobs} and {self.threads}")

    @property
    def uses_ray(self) -> bool:
        return self.ray is not None or self.jobs > 1

    @property
    def gpus(self) -> float:
        return self.ray.gpus if self.ray is not None else 0.0

    def describe(self, n: int) -> str:
        each = f"{self.threads} CPU" + (f" and {self.gpus:g} GPU" if self.gpus else "") + " each"
        if self.ray is not None and self.ray.address != LOCAL:
            return f"training {n} runs as Ray tasks on the cluster at {self.ray.address} ({each})"
        where = f"{self.jobs} worker processes" if self.ray is None else "a local Ray instance"
        return f"training {n} runs in {where} ({each})"


def run_task(exp, spec, state: str, threads: int, cwd: str, gpus: float, source: str):
    """One run, inside a Ray worker: with the driver's privrec (``source``: its source digest), in the driver's
    working directory, with ``threads`` torch threads, on the GPU Ray gave it where it asked for one and never
    on a GPU it did not ask for (device ``auto`` then finds none); logs go to the worker's stderr (Ray forwards
    them to the driver)."""
    import sys

    from privrec.utils.repro import source_digest

    if source_digest() != source:
        raise ParameterError(f"this Ray node runs another privrec (sources {source_digest()}, the driver's {source}): "
                             "install the driver's version on every node (same commit, pip install -e .)")
    if not gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    import torch

    from privrec.utils.perf import tune_cpu_allocator

    folder = Path(cwd, state).parent.parent                # the output's parent (OUT.state/ is made by the run)
    if not Path(cwd).is_dir() or not folder.is_dir():
        raise ParameterError(f"this Ray node cannot reach {folder} (where the output goes): put --out on storage "
                             "every node mounts at the same path, and start the driver there")
    os.chdir(cwd)
    tune_cpu_allocator()
    torch.set_num_threads(threads)
    return exp.train(spec, Path(state), lambda m: print(m, file=sys.stderr, flush=True))


def _connect(backend: Backend) -> None:
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")    # Ray's coming default, and its warning off
    import ray

    if backend.ray is None or backend.ray.address == LOCAL:
        cpus = backend.jobs * backend.threads if backend.ray is None else None
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=True,
                 configure_logging=False)
    else:
        try:
            ray.init(address=backend.ray.address, log_to_driver=True, configure_logging=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise ParameterError(f"cannot join the Ray cluster at {backend.ray.address!r} ({exc}); start one with "
                                 "'ray start --head' and give its address (or auto on its head node)") from None


def train_all(exp, pending: Sequence, state_of: dict[str, Path], backend: Backend, done: Callable,
              left_text: Callable[[list], str], log: Log) -> None:
    """Train ``pending`` runs as Ray tasks under ``backend``, calling ``done(record)`` in the driver as each
    finishes (in finishing order). A failed run does not discard the others; the first failure is raised
    once all have ended. Interrupted (Ctrl-C, SIGTERM): the tasks are cancelled, their states stay."""
    import ray

    _connect(backend)
    try:
        task = ray.remote(run_task)
        from privrec.utils.repro import source_digest

        exp_ref, cwd, source = ray.put(exp), os.getcwd(), source_digest()
        log(backend.describe(len(pending)))
        refs = {task.options(num_cpus=backend.threads, num_gpus=backend.gpus, max_retries=backend.retries,
                             name=s.key).remote(exp_ref, s, str(state_of[s.key]), backend.threads, cwd, backend.gpus,
                                             source): s
                for s in pending}
        waiting, failed, finished = list(refs), None, 0
        try:
            while waiting:
                ready, waiting = ray.wait(waiting, num_returns=1)
                spec = refs[ready[0]]
                try:
                    done(ray.get(ready[0]))
                    finished += 1
                    if waiting:
                        log(f"{finished} of {len(pending)} runs done; " + left_text([refs[r] for r in waiting]))
                except Exception as exc:                   # Ray wraps the task's own error (.cause)
                    cause = getattr(exc, "cause", None) or exc
                    log(f"{spec.key}: failed: {cause}")
                    failed = failed or cause
        except BaseException:
            for ref in waiting:
                ray.cancel(ref, force=True)
            raise
        if failed is not None:
            raise failed
    finally:
        ray.shutdown()
