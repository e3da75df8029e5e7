"""Where a grid's runs came from and what the rest will cost: the method a run trains, the hardware it
finished on, the report lines that flag runs from another lock (or resumed across locks or precisions) or a GPU, and the CPU-hour estimate of the
runs not yet finished (used by every ``reproduce`` report through :mod:`privrec.experiments.runner`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from privrec.experiments.caps import trained_parts
from privrec.utils.repro import lock_digest

if TYPE_CHECKING:
    from privrec.experiments.runner import Outcome, RunRecord, RunSpec


def method_of(labels: dict) -> str:
    """The method a run trains: its ``method`` label (PriCDSR's grid calls it ``variant``; records older
    than either, ``model``)."""
    return str(next((labels[k] for k in ("method", "variant", "model") if k in labels), ""))


def remaining_cost(missing: Sequence[RunSpec], records: Sequence[RunRecord],
                   cap: dict[str, tuple[int, int, int]] | None = None,
                   work: Callable[[dict], float] | None = None) -> dict:
    """What the runs not yet finished should cost. Each is priced at the mean training time (``fit["seconds"]``:
    one run's wall time, on one thread beside the other jobs of its invocation) of the finished runs of its
    method — on the CPU where any ran there, since a GPU seed takes minutes where a CPU run takes hours. Where
    some of them ran under the missing run's own epoch cap (``cap[key][0]``: a sweep on a smaller budget), those
    alone price it (the others may have run beside lighter or heavier jobs); otherwise the mean is scaled
    down where the cap is below those runs' mean epoch count. A method with no finished run yet is priced at
    the mean of all (``unpriced`` counts those). A run with a saved state counts whole, so the estimate is an
    upper bound on what it still needs. Empty when nothing is missing; ``seconds`` is None when no finished
    run has a recorded time. ``work(labels)`` (an experiment's optional ``work_of``) is a run's cost relative to
    its method's others (DIPSGNN: the propagation steps T): times are divided by it before the mean and the
    missing run's price multiplied by it."""
    w = work or (lambda labels: 1.0)
    if not missing:
        return {}
    timed = [r for r in records if isinstance(r.fit.get("seconds"), (int, float))]
    on_cpu = [r for r in timed if trained_on(r.environment) == "cpu"]
    runs: dict[str, list[RunRecord]] = {}
    for r in on_cpu or timed:
        runs.setdefault(method_of(r.labels), []).append(r)
    if not runs:
        return {"runs": len(missing), "seconds": None, "unpriced": len(missing)}
    overall = float(np.mean([r.fit["seconds"] / w(r.labels) for rs in runs.values() for r in rs]))
    caps = cap or {}

    def price(spec: RunSpec) -> float | None:
        rs = runs.get(method_of(spec.labels))
        if not rs:
            return None
        limit = caps.get(spec.key, (None,))[0]
        alike = [r for r in rs if limit and caps.get(r.key, (None,))[0] == limit]
        if alike:                                 # finished runs under the same cap price it as they ran
            return float(np.mean([r.fit["seconds"] / w(r.labels) for r in alike])) * w(spec.labels)
        seconds = float(np.mean([r.fit["seconds"] / w(r.labels) for r in rs])) * w(spec.labels)
        epochs = [r.fit["epochs_run"] for r in rs if isinstance(r.fit.get("epochs_run"), int)]
        if limit and epochs and np.mean(epochs) > 0:          # (a run of several trainings may record 0 epochs)
            seconds *= min(1.0, limit / float(np.mean(epochs)))
        return seconds

    priced = [price(s) for s in missing]
    return {"runs": len(missing), "seconds": sum(overall * w(s.labels) if c is None else c for s, c in zip(missing, priced)),
            "unpriced": sum(c is None for c in priced)}


def trained_on(env: dict) -> str:
    """Where a run finished: its recorded accelerator, or for records older than that field a CUDA
    build of torch (``+cu`` in its version: such runs were trained on a lent GPU), else ``"cpu"``."""
    if env.get("accelerator"):
        return env["accelerator"]
    return f"GPU (torch {env['torch']})" if "+cu" in str(env.get("torch") or "") else "cpu"


def _epochs_by(fit: dict, key: str) -> dict[str, int]:
    """A fit's epoch counts under ``key`` (``epochs_by_lock``, ``epochs_by_precision``), its parts added up."""
    spans: dict[str, int] = {}
    for part in [fit, *trained_parts(fit)]:
        for name, n in (part.get(key) or {}).items():
            spans[name] = spans.get(name, 0) + int(n)
    return spans


def lock_spans(fit: dict, finished_under: str | None) -> str | None:
    """How a run's training epochs split over locks (``fit["epochs_by_lock"]``, kept across resumes; a run
    of several trainings, ``fit["parts"]``, adds up its parts), when not all of them are known to have run
    under the lock the run finished under: e.g. "34 epochs under an unrecorded lock, 15 under
    e57d1dc22387a9f9" for a run resumed from a state saved before states kept their lock. None when they
    all did, or nothing was kept. ``finished_under`` None (outside a checkout) is the trainer's "no lock"."""
    spans = _epochs_by(fit, "epochs_by_lock")
    if not spans or set(spans) <= {finished_under or "no lock"}:
        return None
    return ", ".join(f"{n} epoch{'s' * (n != 1)} under " + ("an unrecorded lock (a state saved before states kept it)"
                                                         if lock == "unrecorded" else lock)
                     for lock, n in spans.items())


def precision_spans(fit: dict) -> str | None:
    """How a run's training epochs split over forward-pass precisions (``fit["epochs_by_precision"]``; a
    run of several trainings adds up its parts) when more than one was used -- a state resumed at another
    precision, e.g. "63 epochs at bf16, 20 at fp32". None for one precision or records without the field."""
    spans = _epochs_by(fit, "epochs_by_precision")
    if len(spans) < 2:
        return None
    return ", ".join(f"{n} epoch{'s' * (n != 1)} at {precision}" for precision, n in spans.items())


def _keys(keys: list[str]) -> str:
    return ", ".join(f"`{k}`" for k in keys[:4]) + (" …" if len(keys) > 4 else "")


def environment_note(outcome: Outcome) -> list[str]:
    """Report lines saying which runs finished under another lock (different pinned releases), which
    ran with installed packages that differ from their lock's pins, and which on a GPU (other kernels and noise streams: the same seed is not bit-identical to a CPU run)."""
    lines = []
    if outcome.other_lock:
        lines += [f"**Environment:** {len(outcome.other_lock)} of {len(outcome.records)} runs finished under "
                  f"another lock than this checkout's ({lock_digest()}): {_keys(outcome.other_lock)}. Their numbers "
                  "came from other pinned releases (see each run's `environment` in results.json).", ""]
    spans = [(r.key, text) for r in outcome.records
             if (text := lock_spans(r.fit, r.environment.get("lock_sha256")))]
    if spans:
        lines += [f"**Environment:** {len(spans)} of {len(outcome.records)} runs trained some epochs under another "
                  "lock than the one they finished under, or resumed a state that did not record its lock: "
                  + "; ".join(f"`{k}` ({t})" for k, t in spans[:4]) + (" …" if len(spans) > 4 else "") + ".", ""]
    mixed = [(r.key, text) for r in outcome.records if (text := precision_spans(r.fit))]
    if mixed:
        lines += [f"**Precision:** {len(mixed)} of {len(outcome.records)} runs resumed a state at another forward-pass "
                  "precision: " + "; ".join(f"`{k}` ({t})" for k, t in mixed[:4]) + (" …" if len(mixed) > 4 else "")
                  + ".", ""]
    drift = [r for r in outcome.records if r.environment.get("lock_mismatch")]
    if drift:
        pins = sorted({p for r in drift for p in r.environment["lock_mismatch"]})
        lines += [f"**Environment:** {len(drift)} of {len(outcome.records)} runs ran with packages other than "
                  f"their lock pins ({'; '.join(pins[:3])}{' …' if len(pins) > 3 else ''}): "
                  f"{_keys([r.key for r in drift])}.", ""]
    gpu: dict[str, list[str]] = {}
    for r in outcome.records:
        where = trained_on(r.environment)
        if where != "cpu":
            gpu.setdefault(where, []).append(r.key)
    if gpu:
        n = sum(len(k) for k in gpu.values())
        lines += [f"**Hardware:** {n} of {len(outcome.records)} runs finished on a GPU ("
                  + "; ".join(f"{where}: {_keys(keys)}" for where, keys in gpu.items())
                  + "), the others on CPU. A seed's GPU run draws from other kernels and noise streams than its "
                  "CPU run would: equally valid, not bit-identical.", ""]
    return lines
