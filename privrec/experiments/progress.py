"""The records a grid leaves beside its report: ``OUT.progress.jsonl`` (one line per finished run) and
``OUT.state/`` (per-epoch training state of runs in flight). See :mod:`privrec.experiments.runner`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from privrec.utils.io import append_json_line, read_json_lines


@dataclass
class RunRecord:
    """A finished run: its labels, how training went (``fit``), and test metrics per protocol
    (``metrics["sampled"]["ndcg@10"]``), with the environment it finished in."""

    key: str
    seed: int
    labels: dict
    fit: dict
    metrics: dict[str, dict[str, float]]
    environment: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def metric(self, protocol: str, name: str) -> float:
        return float(self.metrics[protocol][name])

    def column(self, column: str) -> float:
        """A report column such as ``"ndcg@10 (sampled)"``: ``metrics["sampled"]["ndcg@10"]``."""
        metric, _, proto = column.partition(" (")
        return self.metric(proto.rstrip(")"), metric)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict, key: str | None = None) -> RunRecord:
        if "metrics" in d and "labels" in d:
            return cls(**{k: d[k] for k in ("key", "seed", "labels", "fit", "metrics")},
                       environment=d.get("environment", {}), extra=d.get("extra", {}))
        # records written before the runner existed: test metrics named "ndcg@10 (sampled)"
        metrics: dict[str, dict[str, float]] = {}
        for name, value in d["test"].items():
            metric, _, proto = name.partition(" (")
            metrics.setdefault(proto.rstrip(")") or "test", {})[metric] = value
        labels = {k: v for k, v in d.items() if k not in ("fit", "test", "seed")}
        return cls(key or "", int(d["seed"]), labels, d["fit"], metrics)


def safe_name(name: str) -> str:
    """``name`` as a file name: letters, digits, '.', '-'; anything else becomes '_'."""
    return "".join(ch if ch.isalnum() or ch in ".-" else "_" for ch in name)


def remove_state(path: Path) -> None:
    """A run's training state and whatever the run kept beside it (``path`` + ``.*``: parts of a
    multi-part run, see :func:`privrec.experiments.pfcr_train.remembered`)."""
    import shutil

    path.unlink(missing_ok=True)
    for p in path.parent.glob(f"{path.name}.*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)


# ----------------------------------------------------------------------------------- progress
def progress_path(out_dir: str | Path) -> Path:
    return Path(str(out_dir).rstrip("/") + ".progress.jsonl")


def state_dir(out_dir: str | Path) -> Path:
    return Path(str(out_dir).rstrip("/") + ".state")


def state_file(out_dir: str | Path, fingerprint: str, key: str) -> Path:
    """Where the run ``key`` of ``fingerprint`` keeps its training state between epochs."""
    return state_dir(out_dir) / f"{fingerprint}-{safe_name(key)}.pt"


def unfinished_states(out_dir: str | Path) -> list[Path]:
    """What ``OUT.state/`` holds for runs with no finished record in ``OUT.progress.jsonl``: each state
    and the parts kept beside it (``state.*``, see :func:`remove_state`). A run that reached its epoch
    cap keeps its state beside its record (a higher cap continues it); that one is left out."""
    if not state_dir(out_dir).is_dir():
        return []
    finished = {state_file(out_dir, r["fingerprint"], r["key"]).name for r in read_json_lines(progress_path(out_dir))
                if isinstance(r.get("key"), str) and isinstance(r.get("fingerprint"), str)}
    return sorted(p for p in state_dir(out_dir).iterdir() if not p.name.startswith(".")
                  and p.name not in finished and not any(p.name.startswith(f"{n}.") for n in finished))


def load_progress(path: Path, fingerprint: str | dict[str, str]) -> dict[str, RunRecord]:
    """Finished runs of this fingerprint (or, given ``{key: fingerprint}``, of each key's own; the
    last line of a key wins); cut lines are skipped."""
    out = {}
    for rec in read_json_lines(path):                 # a line cut by a crash is skipped: that run is redone
        want = fingerprint if isinstance(fingerprint, str) else fingerprint.get(rec.get("key"))
        if want is not None and rec.get("fingerprint") == want:
            run = _readable_run(rec)
            if run is None:                           # damaged (an edited or corrupted line): redone like a cut one
                continue
            run.key = rec["key"]
            if not run.environment and rec.get("environment"):
                run.environment = rec["environment"]
            out[rec["key"]] = run
    return out


def _readable_run(rec: dict) -> RunRecord | None:
    """The run of a progress line, or None where it is not a whole record (no run, metrics that are not
    numbers): such a line is treated as never written."""
    try:
        run = RunRecord.from_dict(rec["run"], rec["key"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    ok = isinstance(run.fit, dict) and isinstance(run.metrics, dict) and all(
        isinstance(m, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in m.values())
        for m in run.metrics.values())
    return run if ok else None


def recorded_keys(path: Path) -> set[str]:
    """Every run key with a line in the progress file, whatever its fingerprint."""
    return {rec["key"] for rec in read_json_lines(path) if isinstance(rec.get("key"), str)}


def append_progress(path: Path, fingerprint: str, record: RunRecord) -> None:
    """One JSON line per finished run, flushed and fsynced (a crash loses at most the run in flight)."""
    append_json_line(path, {"fingerprint": fingerprint, "key": record.key, "run": record.to_dict()})
