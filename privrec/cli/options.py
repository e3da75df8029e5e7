"""Option groups shared by several commands."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import click

from privrec.cli.invocation import INVOCATION
from privrec.data.testbed import TESTBEDS
from privrec.errors import ParameterError

if TYPE_CHECKING:
    from privrec.evaluation.evaluator import EvalConfig


def command_line() -> str | None:
    """The command as the user gave it, for reports and records: ``privrec`` + the arguments
    :func:`privrec.cli.main` received; outside ``main``, the process's own argv when it is ``privrec``
    (or ``python -m privrec``), else click's command path."""
    import shlex
    import sys
    from pathlib import Path

    if INVOCATION:
        return shlex.join(["privrec", *INVOCATION])
    entry = Path(sys.argv[0]) if sys.argv else Path()
    if entry.name == "privrec" or (entry.name == "__main__.py" and entry.parent.name == "privrec"):
        return shlex.join(["privrec", *sys.argv[1:]])
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx else None


def grid_options(f):
    """The runner's options of every ``reproduce`` command: threads, parallel jobs, a Ray cluster, resume,
    merging other progress files, report only. ``--ray`` and ``--gpus-per-run`` reach the command as one
    ``ray`` argument (a :class:`~privrec.experiments.parallel.RayTarget`, or None)."""
    import functools

    body = f

    @functools.wraps(body)
    def command(*args, ray=None, gpus_per_run=0.0, **kwargs):
        from privrec.experiments.parallel import RayTarget

        if gpus_per_run and ray is None:
            raise ParameterError("--gpus-per-run asks Ray for GPUs: give it with --ray [ADDRESS]")
        return body(*args, ray=None if ray is None else RayTarget(ray, gpus_per_run), **kwargs)

    f = command
    f = click.option("--report-only", is_flag=True,
                     help="Train nothing: write the report from the finished runs, listing the missing ones.")(f)
    f = click.option("--add-progress", "add_progress", multiple=True, type=click.Path(dir_okay=False, exists=True),
                     help="Also reuse the finished runs of another progress file (e.g. seeds run elsewhere with "
                          "--seeds 1 --out reports/x-s1); only runs of the same configuration count. Repeatable.")(f)
    f = click.option("--resume/--no-resume", default=True, show_default=True,
                     help="Reuse finished runs recorded in OUT.progress.jsonl by an earlier, interrupted run.")(f)
    f = click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Train this many runs at once on this machine's CPUs, as tasks of a local Ray instance "
                          "(~1.5 GB memory each on ML-1M); the numbers are those of a one-process run. On a GPU "
                          "machine: --ray --gpus-per-run 0.5 (two runs per GPU).")(f)
    f = click.option("--gpus-per-run", "gpus_per_run", type=click.FloatRange(min=0, max=64), default=0.0,
                     help="With --ray: GPUs each run asks for (1, or 0.5 to share one between two runs); runs land "
                          "on GPU nodes and train there; Ray's runs without it never touch a GPU.")(f)
    f = click.option("--ray", "ray", is_flag=False, flag_value="local", default=None, metavar="[ADDRESS]",
                     help="Train the runs as Ray tasks: on a new local Ray instance (--ray alone), or on the cluster "
                          "at ADDRESS (host:port of its head; auto on a machine where 'ray start' ran). The output "
                          "must be on storage every node mounts at the same path (docs/cluster.md).")(f)
    f = click.option("--threads", type=int, default=None, help="torch CPU threads per training (default 1).")(f)
    from privrec.cli.config import config_option

    return config_option(f)


def testbed_options(name: str):
    """``--testbed`` and ``--out`` of the cross-domain ``reproduce`` commands (the output folder defaults to
    ``reports/NAME`` on the dense testbed and ``reports/NAME-TESTBED`` on another)."""
    def wrap(f):
        f = click.option("--testbed", type=click.Choice(list(TESTBEDS)), default="dense", show_default=True,
                         help="Which users of each target domain are cold-start: 'dense' keeps every history "
                              "(ML-1M's genre split as is); 'coldK' cuts 80% of the target's users to their first "
                              "K target items (+ validation + test) and evaluates on them, the regime the papers "
                              "evaluate (docs/testbeds.md).")(f)
        f = click.option("--out", type=click.Path(file_okay=False), default=None,
                         help=f"Report folder [default: reports/{name}, reports/{name}-TESTBED on another testbed, "
                              "with -quick for --quick].")(f)
        return f
    return wrap


def default_out(name: str, out: str | None, testbed: str = "dense", quick: bool = False) -> str:
    """A ``reproduce`` command's output folder: ``--out`` where given, else ``reports/NAME`` with ``-TESTBED`` on
    another testbed and ``-quick`` for a quick run (so a quick run never replaces a full report, and ``privrec
    demo`` and ``reproduce pricdsr --quick`` share one folder: the second resumes the first)."""
    if out is not None:
        return out
    return f"reports/{name}" + ("" if testbed == "dense" else f"-{testbed}") + ("-quick" if quick else "")


def eval_options(f):
    f = click.option("--eval-mode", type=click.Choice(["full", "sampled"]), default="full", show_default=True,
                     help="Full ranking over all items, or sampled ranking against negatives.")(f)
    f = click.option("--negatives", type=int, default=100, show_default=True,
                     help="Negatives per user for sampled ranking.")(f)
    f = click.option("--sampler", type=click.Choice(["popularity", "uniform"]), default="popularity",
                     show_default=True, help="How sampled-ranking negatives are drawn.")(f)
    f = click.option("--mask-history/--no-mask-history", default=None,
                     help="Exclude the user's history items from the full ranking (default: the protocol's "
                          "choice; RecBole does not mask for sequential models).")(f)
    f = click.option("--ks", default="5,10,20", show_default=True,
                     help="Cut-offs K of HR/Recall/NDCG/MRR@K, comma-separated (e.g. 1,5,10 or 10,50).")(f)
    return f


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(k) for k in str(text).split(",") if k.strip()}))
    except ValueError:
        raise ParameterError(f"--ks must be comma-separated positive integers such as 5,10,20, got {text!r}") from None
    if not ks or ks[0] < 1:
        raise ParameterError(f"--ks must list positive integers such as 5,10,20, got {text!r}")
    return ks


def eval_config(eval_mode: str, negatives: int, sampler: str, mask_history: bool, seed: int = 0,
                ks: str = "5,10,20") -> EvalConfig:
    from privrec.evaluation.evaluator import EvalConfig

    if negatives < 1:
        raise ParameterError(f"--negatives must be >= 1, got {negatives}")
    return EvalConfig(mode=eval_mode, n_negatives=negatives, sampler=sampler, mask_history=mask_history, seed=seed,
                      ks=parse_ks(ks))


def parse_grad_clip(text: str | None, default: float | None) -> float | None:
    """``--grad-clip``: a positive gradient norm bound, or ``none``; not given: ``default`` (the protocol's)."""
    if text is None:
        return default
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise ParameterError(f"--grad-clip must be a positive number or 'none' (no clipping), got {text!r}")
    return value


def parse_patience(text: str | int) -> int | None:
    """``--patience``: validations without improvement before stopping, or ``none`` (a fixed budget of
    ``--epochs``, the best validated epoch kept, as ``reproduce rr`` trains)."""
    if str(text).strip().lower() == "none":
        return None
    try:
        value = int(str(text))
    except ValueError:
        value = 0
    if value < 1:
        raise ParameterError(f"--patience must be a whole number >= 1 or 'none' (no early stopping), got {text!r}")
    return value


def seeds_checked(ctx, param, text: str | None) -> str | None:
    """click callback of ``--seeds``: refused at parse time (before any import or data), kept as given."""
    if text is not None:
        parse_seeds(text)
    return text


def parse_seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise ParameterError(f"--seeds must be comma-separated integers such as 0,1,2, got {text!r}") from None
    if not seeds or any(s < 0 for s in seeds):
        raise ParameterError(f"--seeds must list non-negative integers, got {text!r}")
    if any(s >= 2**63 for s in seeds):                # torch and NumPy take seeds below 2^63
        raise ParameterError(f"--seeds: {max(seeds)} is too large; seeds are integers from 0 to 2^63 - 1")
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"--seeds lists a seed twice ({text!r}); a mean ± std needs distinct seeds")
    return seeds


def parse_assignments(items: tuple[str, ...]) -> dict:
    """``key=value`` pairs; values are parsed as JSON when possible (numbers, booleans)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParameterError(f"--set expects key=value, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out

