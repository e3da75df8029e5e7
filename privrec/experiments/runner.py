"""The experiment runner every ``reproduce`` stands on: a grid of runs, resumed, in parallel, recorded.

An experiment declares its runs (:class:`RunSpec`: a stable key, a seed, the labels that
identify it) and knows how to train one (returning a :class:`RunRecord`); the runner does the
rest, the same way for every paper:

* **progress**: every finished run is appended to ``OUT.progress.jsonl`` (one JSON line,
  flushed and fsynced; a line cut by a crash is skipped), tagged with the experiment's
  *fingerprint* (a hash of everything that must match for a result to be reused) and the
  environment it ran in (git commit, lock digest); an experiment whose methods read different
  settings declares ``fingerprint_of(spec)`` too, so changing one model's settings redoes that
  model's runs only;
* **resume**: a rerun reuses finished runs of the same fingerprint, continues an interrupted one
  from its per-epoch state in ``OUT.state/`` (result identical to an uninterrupted run), and
  continues a run that hit a lower epoch cap; ``add_progress`` merges runs done elsewhere;
* **prepare after the check**: an experiment's pre-training step (publishing a release) runs only
  for runs that will train, never for finished ones (a resume or a report-only call re-publishes
  nothing, except once for a run recorded before records carried certificates, below);
* **certificates travel with the records**: an experiment whose runs read a release declares
  ``release_of(spec)`` (its folder, or None); the finished run's record stores that release's
  certificate (``extra["certificate"]``), so a report written on a fresh clone, where release folders
  (data, not committed) are absent, still lists every release. A finished run recorded without one
  gets it once: from its folder, or by re-publishing the release from its seed (deterministic, and
  cheap beside training), recorded as a new line of the progress file;
* **jobs, clusters**: ``jobs > 1`` trains that many runs at once as tasks of a local Ray instance,
  ``ray`` sends them to a Ray cluster (:mod:`privrec.experiments.parallel`: one code path); each run
  is seeded on its own, so the numbers equal a one-process run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from privrec.errors import ParameterError, ReleaseError
from privrec.experiments.caps import epochs_run, reusable, stopped_early
from privrec.experiments.certificates import certificate_of, record_certificates
from privrec.experiments.parallel import Backend, RayTarget, train_all
from privrec.experiments.progress import (  # noqa: F401  (the runner's public names, as before)
    RunRecord,
    _readable_run,
    append_progress,
    load_progress,
    progress_path,
    recorded_keys,
    remove_state,
    safe_name,
    state_dir,
    state_file,
    unfinished_states,
)
from privrec.experiments.provenance import remaining_cost
from privrec.utils.repro import environment, lock_digest

Log = Callable[[str], None]


@dataclass(frozen=True)
class RunSpec:
    """One training run of a grid: ``key`` names it uniquely and stably across sessions."""

    key: str
    seed: int
    labels: dict                         # what identifies the run in tables (model, domain, epsilon, ...)


class Experiment(Protocol):
    """What a pipeline declares; everything else is the runner's."""

    def runs(self) -> list[RunSpec]: ...
    def fingerprint(self) -> str: ...
    def cap(self) -> tuple[int, int, int]: ...          # (epoch cap, patience, eval_every) of its trainer
    # optional: fingerprint_of(spec) -> str and cap_of(spec) -> (epochs, patience, eval_every), per run, and
    # work_of(labels) -> float, a run's cost relative to its method's others (prices the runs left);
    # release_of(spec) -> Path | None, the release folder a run reads (its certificate is recorded with it)
    def prepare(self, spec: RunSpec, log: Log) -> None: ...
    def train(self, spec: RunSpec, state: Path, log: Log) -> RunRecord: ...


def grid_fingerprint(cfg, named: Sequence[str], data_summary: dict) -> str:
    """An experiment's fingerprint: its config (``cfg.to_dict()``) without what a run's key already names
    (``named``: the grid's lists, seeds, per-run settings), the epoch cap and progress bars, plus the
    data's summary — so widening a grid or raising the cap reuses every finished run."""
    from privrec.utils.repro import config_hash

    d = cfg.to_dict()
    for k in named:
        d.pop(k)
    d["train"].pop("progress", None)
    d["train"].pop("epochs")
    d["data"] = {k: v for k, v in data_summary.items() if k not in ("user_fields", "item_fields")}
    return config_hash(d)


def only_sweeps(chosen: Sequence[str], sweeps: dict[str, str], off: dict[str, object] | None = None) -> dict:
    """Config overrides for ``--figures``: every sweep of ``sweeps`` (figure name -> config field) not in
    ``chosen`` switched off (its field set to ``off[field]``, else ``()``); an empty or unknown choice is refused."""
    unknown = [f for f in chosen if f not in sweeps]
    if unknown or not chosen:
        raise ParameterError(f"unknown figures {unknown or list(chosen)}; use some of {list(sweeps)}")
    return {field: (off or {}).get(field, ()) for f, field in sweeps.items() if f not in chosen}


def fingerprints(exp: Experiment, specs: Sequence[RunSpec]) -> dict[str, str]:
    """Each run's fingerprint: ``exp.fingerprint_of(spec)`` where the experiment declares it (settings
    that only some methods read), else the experiment's one ``fingerprint()``."""
    per_run = getattr(exp, "fingerprint_of", None)
    if per_run is None:
        common = exp.fingerprint()
        return {s.key: common for s in specs}
    return {s.key: per_run(s) for s in specs}


def caps(exp: Experiment, specs: Sequence[RunSpec]) -> dict[str, tuple[int, int, int]]:
    """Each run's (epoch cap, patience, eval_every): ``exp.cap_of(spec)`` where declared (e.g. a
    sweep trained on a smaller budget than the main table), else the experiment's ``cap()``."""
    per_run = getattr(exp, "cap_of", None)
    if per_run is None:
        common = exp.cap()
        return {s.key: common for s in specs}
    return {s.key: per_run(s) for s in specs}


# ------------------------------------------------------------------------------------ execute
@dataclass
class Outcome:
    records: list[RunRecord]            # finished runs, in the experiment's run order
    missing: list[str]                  # keys not finished (report-only, or failed)
    progress: Path
    other_lock: list[str]               # keys finished under another lock than this checkout's
    remaining: dict = field(default_factory=dict)   # cost estimate of the missing runs (remaining_cost)


def execute(exp: Experiment, out_dir: str | Path, *, resume: bool = True, add_progress: Sequence[str | Path] = (),
            train_missing: bool = True, jobs: int = 1, threads: int = 1, keep_capped_states: bool = True,
            log: Log = print, describe: Callable[[RunRecord], str] | None = None, ray: RayTarget | None = None) -> Outcome:
    """Train every run of ``exp`` not yet finished (see module doc) and return all finished ones: in this
    process, or as Ray tasks (``jobs > 1`` on this machine, ``ray``: a local instance or a cluster's address;
    :mod:`privrec.experiments.parallel`)."""
    backend = Backend(jobs=jobs, threads=threads, ray=ray)
    specs = exp.runs()
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ParameterError("the experiment declares two runs with the same key")
    progress, states, fp = progress_path(out_dir), state_dir(out_dir), fingerprints(exp, specs)
    describe = describe or (lambda r: f"{r.key}: done")
    finished = load_progress(progress, fp) if resume else {}
    for other in add_progress:
        if not Path(other).is_file():
            raise ParameterError(f"{other}: no such progress file (written next to --out as OUT.progress.jsonl)")
        theirs = load_progress(Path(other), fp)
        added = [k for k in theirs if k not in finished]
        for key in added:
            finished[key] = theirs[key]
            append_progress(progress, fp[key], theirs[key])
        log(f"{other}: {len(added)} finished runs added" + ("" if theirs else
            " — none of its runs has this configuration (same --quick/--epochs and code settings?)"))
    cap = caps(exp, specs)
    for key in sorted(k for k, r in finished.items() if k in cap and not reusable(r.fit, cap[k])):
        log(f"{key}: ran to an epoch cap of {epochs_run(finished[key].fit, cap[key][0])} without stopping early; "
            f"continued under the cap of {cap[key][0]}")
        del finished[key]
    if finished:
        log(f"resuming: {len(finished)} finished runs read from {progress}")
    outside = recorded_keys(progress) - set(keys)
    if outside:                                   # a smaller grid rewrites OUT without them: say so first
        log(f"note: {len(outside)} run(s) recorded in {progress} are outside this invocation's grid (other methods, "
            f"seeds or sweeps, or earlier settings) and will not be in the report written to {out_dir}; rerun with "
            "the full grid's options and --report-only to report every finished run")
    if not train_missing and not any(k in finished for k in keys):
        shown = ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
        raise ParameterError(f"no finished runs of this configuration in {progress}, so no report: all {len(keys)} "
                             f"runs are missing ({shown}); run without --report-only to train them (each run's cost "
                             "is estimated once one of its method has finished)")
    pending = [s for s in specs if s.key not in finished] if train_missing else []
    missing = [s.key for s in specs if s.key not in finished and not train_missing]
    state_of = {s.key: state_file(out_dir, fp[s.key], s.key) for s in specs}
    for key in keys:
        if key in finished:
            log(describe(finished[key]))
    for spec in pending:                          # publish (or other preparation) only what will train
        if not resume:
            remove_state(state_of[spec.key])
        exp.prepare(spec, log)

    release_of = getattr(exp, "release_of", None)
    by_key = {s.key: s for s in specs}

    def done(record: RunRecord) -> None:
        record.environment = {**environment(), **record.environment}
        folder = release_of(by_key[record.key]) if release_of is not None else None
        if folder is not None:
            record.extra = {**record.extra, "certificate": certificate_of(folder)}
        append_progress(progress, fp[record.key], record)
        finished[record.key] = record
        log(describe(record))

    work = getattr(exp, "work_of", None)
    if pending and backend.uses_ray and (len(pending) > 1 or backend.ray is not None):   # --jobs, one run: here
        parallel = min(backend.jobs, len(pending)) if backend.ray is None else 1
        train_all(exp, pending, state_of, backend, done,
                  lambda left: eta_text(remaining_cost(left, list(finished.values()), cap, work), parallel), log)
    else:
        for i, spec in enumerate(pending):
            log(progress_line(i, pending, list(finished.values()), cap, work))
            done(exp.train(spec, state_of[spec.key], log))
    for record in record_certificates(exp, specs, finished, log):
        append_progress(progress, fp[record.key], record)
    for key in keys:                              # a capped run keeps its state (a higher cap continues it)
        if key in finished and (stopped_early(finished[key].fit, *cap[key][1:]) or not keep_capped_states):
            remove_state(state_of[key])
    if states.is_dir():
        for tmp in states.glob(".*.tmp"):            # a save killed mid-write
            tmp.unlink(missing_ok=True)
        if not any(states.iterdir()):
            states.rmdir()
    records = [finished[k] for k in keys if k in finished]
    if not records:
        raise ParameterError(f"no finished runs of this configuration in {progress}; run without --report-only first")
    mine = lock_digest()
    other = [r.key for r in records if r.environment.get("lock_sha256") not in (None, mine)]
    return Outcome(records, missing, progress, other, remaining_cost([by_key[k] for k in missing], records, cap,
                                                                 getattr(exp, "work_of", None)))


def eta_text(cost: dict, parallel: int = 1) -> str:
    """'about 2.3 h left (7 runs, priced from the finished ones)' from :func:`remaining_cost`."""
    if not cost:
        return "nothing left"
    if cost.get("seconds") is None:
        return f"{cost['runs']} runs left (no finished run to price them yet)"
    seconds = cost["seconds"] / max(parallel, 1)
    when = f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{max(seconds / 60, 1):.0f} min"
    unpriced = f"; {cost['unpriced']} priced at the mean of all methods" if cost.get("unpriced") else ""
    return f"about {when} left ({cost['runs']} runs, priced from the finished ones{unpriced})"


def progress_line(i: int, pending: Sequence[RunSpec], finished: Sequence[RunRecord], cap: dict,
                  work: Callable[[dict], float] | None = None) -> str:
    """'run 3 of 12: KEY; about 2.3 h left (...)' before the ``i``-th (0-based) pending run trains."""
    return (f"run {i + 1} of {len(pending)}: {pending[i].key}; "
            + eta_text(remaining_cost(pending[i:], finished, cap, work)))


def fit_and_test(model, task, train_cfg, sampled, full, seed: int, state: Path | None, tag: str,
                 log: Log, subsets: dict[str, np.ndarray] | None = None) -> tuple[dict, dict[str, dict[str, float]]]:
    """Train ``model`` on ``task`` (epochs selected on validation under ``sampled``), then test it
    under both protocols: ``(fit record, {"sampled": metrics, "full": metrics})``. Seeded by ``seed``.
    ``subsets`` (name -> bool per user row) adds each protocol's means over those users only, as
    ``metrics["sampled, NAME"]`` (report column ``"hr@1 (sampled, NAME)"``)."""
    from dataclasses import replace

    from privrec.evaluation.evaluator import evaluate
    from privrec.training.trainer import Trainer

    log(f"{tag} {task.describe()}")
    trainer = Trainer(model, task, replace(train_cfg, seed=seed), replace(sampled, seed=seed),
                      log=lambda m: log(f"{tag} {m}"))
    fit = trainer.fit(state)
    keep = bool(subsets)
    tests = {"sampled": trainer.test(keep), "full": evaluate(trainer.model, task, "test", full, trainer.device, keep)}
    metrics = {proto: res.metrics for proto, res in tests.items()}
    for name, rows in (subsets or {}).items():
        metrics.update({f"{proto}, {name}": res.subset(rows) for proto, res in tests.items()})
    return fit.to_dict(), metrics


@contextlib.contextmanager
def owned_output(out_dir: str | Path, paper: str) -> Iterator[None]:
    """What a ``reproduce`` checks before it trains anything, and the output's lock held until its report
    is written: ``out_dir`` must be empty, absent or this paper's report (privrec never deletes a user's
    files, nor one kind of output for another), outside the dataset cache; ``OUT.progress.jsonl`` must
    be privrec's. A second ``reproduce`` into the same output is refused at once."""
    from privrec.release.paths import check_output
    from privrec.utils.outputs import check_progress_file, check_replaceable, output_lock

    out, kind = Path(out_dir), f"reproduce {paper}"
    check_output(out, (), "--out")
    check_replaceable(out, kind)
    check_progress_file(progress_path(out))
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(output_lock(out))
        except ReleaseError as exc:
            raise ReleaseError(f"{exc}. To read its finished runs meanwhile, write a report elsewhere: the same "
                               f"command with --report-only --out OTHER --add-progress {progress_path(out)}") from None
        check_replaceable(out, kind)
        yield


def reproduce_grid(cfg, make: Callable[[object, Path], Experiment], report, out_dir: str | Path, *, log: Log,
                   describe: Callable[[RunRecord], str], started: float, resume: bool = True,
                   add_progress: Sequence[str | Path] = (), train_missing: bool = True,
                   keep_capped_states: bool = True, command: str | None = None, workers: int = 1,
                   threads: int = 1, ray: RayTarget | None = None) -> dict:
    """What every ``reproduce`` does after loading its data: the experiment ``make(cfg, published)``
    (releases in ``OUT.published/``; workers train without progress bars) executed, then
    ``report.result(...)`` written with ``report.write`` into ``out_dir``."""
    import time
    from dataclasses import replace

    published = Path(str(out_dir).rstrip("/") + ".published")
    parallel = workers > 1 or ray is not None        # Ray tasks train without progress bars
    run_cfg = replace(cfg, train=replace(cfg.train, progress=False)) if parallel else cfg
    paper = report.__name__.rsplit(".", 1)[-1].removesuffix("_report")     # privrec.experiments.pfcr_report: pfcr
    with owned_output(out_dir, paper):
        exp = make(run_cfg, published)
        outcome = execute(exp, out_dir, resume=resume, add_progress=add_progress, train_missing=train_missing,
                          jobs=workers, threads=threads, keep_capped_states=keep_capped_states, log=log, ray=ray,
                          describe=describe)
        result = report.result(cfg, exp, outcome, command=command, seconds=time.perf_counter() - started,
                               env=environment())
        report.write(out_dir, result)
    return result
