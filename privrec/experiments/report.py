"""Aggregation over seeds and report writing (JSON + Markdown, atomically)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from privrec.utils.io import write_json_atomic, write_text_atomic


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single run)."""
    arr = np.asarray(values, dtype=np.float64)
    if len(arr) == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0


def aggregate(runs: Iterable[dict[str, float]]) -> dict[str, dict]:
    """{metric: {"mean", "std", "n", "values"}} over runs (metrics present in every run)."""
    runs = list(runs)
    if not runs:
        return {}
    names = [k for k in runs[0] if all(k in r for r in runs)]
    out = {}
    for name in names:
        values = [float(r[name]) for r in runs]
        m, s = mean_std(values)
        out[name] = {"mean": m, "std": s, "n": len(values), "values": values}
    return out


def fmt_num(x, spec: str = ".4g") -> str:
    """A certificate's number for a report: '–' when absent, '∞' when infinite (certificates write "inf")."""
    if x is None:
        return "–"
    return "∞" if x in (float("inf"), "inf") else format(float(x), spec)


def pm(stat: dict | None, digits: int = 4) -> str:
    """'0.1234 ± 0.0012' (or just the mean for one run)."""
    if not stat:
        return "–"
    if stat.get("n", 1) > 1:
        return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"
    return f"{stat['mean']:.{digits}f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    rows = [[str(c) for c in r] for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def write_report(out_dir: str | os.PathLike, result: dict, markdown: str, name: str = "results") -> Path:
    """``results.json`` and ``results.md`` into a folder being built (each file atomically); the caller
    marks the folder (:func:`privrec.utils.outputs.seal`) and swaps it into place."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / f"{name}.json", result)
    write_text_atomic(out / f"{name}.md", markdown)
    return out


def save_report(out_dir: str | os.PathLike, result: dict, markdown: str,
                plots: dict[str, Callable[[Path], None]] | None = None, kind: str | None = None) -> Path:
    """A report folder (results.json, results.md, plots) built aside, marked as privrec's output of
    ``kind`` (default: ``reproduce <result's kind>``) and renamed into place as a whole, under the
    output's lock; refused if ``out_dir`` holds anything privrec cannot prove it wrote, or another kind
    of output (:func:`privrec.utils.outputs.check_replaceable`)."""
    from privrec.utils.io import atomic_dir
    from privrec.utils.outputs import check_replaceable, output_lock, seal

    out = Path(out_dir)
    kind = kind or f"reproduce {result.get('kind')}"
    check_replaceable(out, kind)
    with output_lock(out, wait=60.0):
        check_replaceable(out, kind)
        with atomic_dir(out) as tmp:
            write_report(tmp, result, markdown)
            for name, draw in (plots or {}).items():
                draw(tmp / name)
            seal(tmp, kind)
    return out


def partial_note(n_done: int, res: dict, noun: str = "runs", extra: str = "", show: int = 5) -> list[str]:
    """The line of a report written before every run finished: how many did, which did not (the first
    ``show`` keys; all are in ``results.json`` → ``missing``), and what the rest should cost
    (``res["remaining"]``: :func:`privrec.experiments.provenance.remaining_cost`). Empty when none is missing."""
    miss = res.get("missing") or []
    if not miss:
        return []
    keys = ", ".join(f"`{k}`" for k in miss[:show])
    more = f" and {len(miss) - show} more (`results.json` → `missing`)" if len(miss) > show else ""
    line = f"**Partial report: {n_done} of {n_done + len(miss)} {noun} finished**; {extra}not yet run: {keys}{more}."
    cost = res.get("remaining") or {}
    if cost.get("seconds") is not None:
        line += (f" The missing runs should take about **{cost['seconds'] / 3600:.1f} CPU-hours** (each at the mean "
                 "wall time of its method's finished CPU runs, one thread per run, scaled to its epoch cap; runs "
                 "with a saved state counted whole" + (f"; {cost['unpriced']} of a method with no finished run yet, at the mean of all)"
                            if cost.get("unpriced") else ")") + ".")
    return [line, ""]


def training_by(runs: Sequence[dict], label: str, names: dict[str | None, str] | None = None) -> dict[str, dict]:
    """The runs' summed training time (``fit["seconds"]``: one thread each, every session of a resumed run)
    split by one of their labels, e.g. a grid's ``budget``: shown name → {"runs", "seconds"}. A label value is
    shown as ``names[value]`` where given, else as itself; a run without the label as ``names[None]`` or "other"."""
    names = {None: "other", **(names or {})}
    out: dict[str, dict] = {}
    for r in runs:
        value = (r.get("labels") or {}).get(label)
        group = out.setdefault(str(names.get(value, value)), {"runs": 0, "seconds": 0.0})
        group["runs"] += 1
        group["seconds"] += float((r.get("fit") or {}).get("seconds") or 0.0)
    return {name: {**g, "seconds": round(g["seconds"], 1)} for name, g in out.items()}


def trailer(res: dict) -> list[str]:
    """The last lines of every reproduction report: the paper's datasets and methods it does not run
    (:mod:`privrec.experiments.not_run`, by ``res["kind"]``), the command that wrote it and the training time
    (split by ``res["training_by"]`` where a report gives it: :func:`training_by`)."""
    from privrec.experiments.not_run import markdown as not_run

    lines = not_run(res.get("kind", ""))
    lines += [f"This report was written by: `{res['command']}`", ""] if res.get("command") else []
    split = res.get("training_by") or {}
    parts = "; ".join(f"{name}: {g['seconds'] / 3600:.2f} h over {g['runs']} run{'s' * (g['runs'] != 1)}"
                      for name, g in split.items())
    return lines + [f"Training time summed over the runs: {res.get('training_seconds', 0) / 3600:.2f} h "
                    + (f"({parts}; " if len(split) > 1 else "(")
                    + f"this invocation: {res['seconds']:.0f} s)."]


ABSENT_RELEASE = "not on this machine: as the previous report recorded it"
RECORDED_RELEASE = "not on this machine: as its run recorded it"
CERTIFICATE_FIELDS = ("summary", "input", "guarantee")


def certificates(published: str | os.PathLike, records: Sequence = ()) -> dict[str, dict]:
    """The certificate of every release of a grid (name → summary, input, guarantee): each folder under
    ``published`` (``OUT.published/``), then each finished run's recorded one (``records``: run records
    whose ``extra["certificate"]`` the runner stored, :func:`privrec.experiments.certificates.certificate_of`).

    Release folders are data, not committed: on a fresh clone only the releases its runs rebuilt are
    there. A run's record carries its release's certificate, so a report written anywhere lists every
    release a finished run read (marked ``"folder": RECORDED_RELEASE``); a release neither here nor in a
    record that the previous report (``OUT/results.json``) certified keeps that certificate, marked
    ``"folder": ABSENT_RELEASE``. A folder present here always wins."""
    import json
    from pathlib import Path

    folder = Path(published)
    out = {}
    for cert in sorted(folder.glob("*/certificate.json")) if folder.is_dir() else []:
        c = json.loads(cert.read_text(encoding="utf-8"))
        out[cert.parent.name] = {k: c[k] for k in CERTIFICATE_FIELDS}
    for r in records:
        c = (getattr(r, "extra", None) or {}).get("certificate")
        if isinstance(c, dict) and c.get("release") and c["release"] not in out:
            out[c["release"]] = {**{k: c[k] for k in CERTIFICATE_FIELDS}, "folder": RECORDED_RELEASE}
    previous = folder.with_name(folder.name.removesuffix(".published")) / "results.json"
    if folder.name.endswith(".published") and previous.is_file():
        try:
            recorded = json.loads(previous.read_text(encoding="utf-8")).get("certificates") or {}
        except (OSError, ValueError):
            recorded = {}                   # an unreadable old report is replaced, not trusted
        for name, c in recorded.items():
            if name not in out and isinstance(c, dict) and {"summary", "input", "guarantee"} <= c.keys():
                out[name] = {**c, "folder": ABSENT_RELEASE}
    return dict(sorted(out.items()))


def release_name(name: str, cert: dict) -> str:
    """A release's name for a report's certificate table, ‡ where its folder is not on this machine."""
    return name + ("‡" if cert.get("folder") in (ABSENT_RELEASE, RECORDED_RELEASE) else "")


def absent_note(certs: dict[str, dict]) -> list[str]:
    """The footnote of the ‡ rows of :func:`release_name` (empty when every release folder is here)."""
    n = sum(c.get("folder") in (ABSENT_RELEASE, RECORDED_RELEASE) for c in certs.values())
    old = sum(c.get("folder") == ABSENT_RELEASE for c in certs.values())
    source = ("the certificates their runs recorded" if not old else
              f"the certificates their runs recorded ({old} from the previous report)")
    return [f"‡ {n} release folder(s) not on the machine that wrote this report (a fresh clone: release folders "
            f"are data, not committed); theirs are {source}. Rerunning the run rebuilds the same release from its "
            "seed.", ""] if n else []
