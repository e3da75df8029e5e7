"""PriCDSR end to end: ``publish(aux, sdp, ε) → train(target, aux′) → evaluate(target)``.

The auxiliary domain's train rows (never its validation or test items) are front-padded to
``max_len``, perturbed with the SDP mechanism (:mod:`privrec.privacy.sdp`) and handed to an
unchanged cross-domain model (DASL). The model cannot tell perturbed from clean input: the
only difference between "DASL" and "PriCDSR-DASL" is which matrix :func:`publish` returned.

Protocol (PriCDSR Sec. VI): leave-one-out per domain; HR@5/10 and NDCG@5/10 against 100
popularity-sampled negatives (labelled "sampled"), plus full-ranking NDCG@10/HR@10; epochs
selected on validation (sampled NDCG@10) only; mean ± std over seeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from privrec.data.crossdomain import CrossDomainData, ml1m_cross_domain
from privrec.data.tables import load
from privrec.errors import DataFormatError, ParameterError
from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.experiments.report import aggregate, markdown_table, pm
from privrec.models.dasl import DASL
from privrec.privacy import sdp
from privrec.privacy.guarantee import Guarantee, certificate
from privrec.privacy.validate import check_epsilon
from privrec.training.tasks import CrossDomainTask
from privrec.training.trainer import TrainConfig, Trainer
from privrec.utils.repro import config_hash, environment, resolve_seed, seed_everything

VARIANTS = ("DASL-single", "DASL", "PriCDSR-DASL")
SAMPLED = EvalConfig(mode="sampled", n_negatives=100, sampler="popularity", ks=(5, 10), metrics=("hr", "ndcg"))
FULL = EvalConfig(mode="full", ks=(10,), metrics=("hr", "ndcg"))


@dataclass(frozen=True)
class PriCDSRConfig:
    dataset: str = "ml-1m"
    max_len: int = 50                 # L: rows published and modelled
    window: int = 10                  # T: DASL memory window
    encoder: str = "stream"
    embedding: int = 64
    dropout: float = 0.5
    beta: float = 1.0
    # lr 5e-3: best of {1e-3, 5e-3, 1e-2} on *validation* (DASL-single, action<-drama, seed 0); a
    # batch is 64 users (~3,000 targets), so an epoch has ~37x fewer Adam steps than the paper's
    # 128-sample batches, and at the paper's lr 1e-3 nothing had converged by epoch 30.
    # Patience 10 (RecBole's stopping_step) decides when to stop: with patience 3 validation noise
    # (±0.004) stopped a still-improving run at epoch 30 while others ran to 48. The cap is only a
    # safety net: 60 and then 100 epochs bound drama-target runs still improving (DASL-single
    # drama<-action: validation +0.004 per 5 epochs at epoch 100), so it is 300; a capped run is
    # marked in the report and continues from its saved state when the cap is raised.
    train: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=300, batch_size=64, lr=5e-3, patience=10,
                                                                  select_metric="ndcg@10", grad_clip=None))
    epsilon: float = 10.0             # Table II's PriCDSR setting
    epsilons: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
    seeds: tuple[int, ...] = (0, 1, 2)
    directions: tuple[str, ...] = ("action<-drama", "drama<-action")
    table3_directions: tuple[str, ...] = ("action<-drama",)
    max_users: int | None = None      # quick runs: a seeded subsample of shared users

    def to_dict(self) -> dict:
        return asdict(self)


def parse_direction(direction: str, data: CrossDomainData) -> tuple[str, str]:
    """'target<-aux' → (target, aux), checked against the data's domain names."""
    parts = direction.split("<-")
    if len(parts) != 2 or set(parts) != set(data.names):
        raise ParameterError(f"direction must be 'target<-aux' over the domains {data.names}, got {direction!r}")
    return parts[0], parts[1]


def publish(data: CrossDomainData, aux: str, epsilon: float | None, max_len: int, seed: int | None
            ) -> tuple[np.ndarray, Guarantee | None, dict]:
    """The auxiliary rows a target-domain model may use: train split only, last ``max_len``
    items, front-padded, shape (n_users + 1, max_len). With ``epsilon`` they pass through the
    SDP mechanism and a guarantee comes back; ``None`` shares them unperturbed (DASL)."""
    rows = data.publishable_rows(aux).to_padded(max_len).astype(np.int64)
    if epsilon is None:
        return rows, None, {}
    check_epsilon(epsilon)
    info = resolve_seed(seed)
    out = rows.copy()
    out[1:] = sdp.perturb(rows[1:], data.domain(aux).n_items, epsilon, np.random.default_rng(info.seed))
    return out, sdp.guarantee(epsilon, data.domain(aux).n_items, max_len), info.to_dict()


def export_atomic(rows: np.ndarray, data: CrossDomainData, aux: str, path: str | Path) -> Path:
    """Write published rows as RecBole atomic files: ``path`` (``.inter``: user_id, item_id,
    timestamp = position 1..L in the published row, so order survives) and, next to it, a
    ``.user`` file listing every published user (a row the mechanism left empty has no
    ``.inter`` line but is still published). Raw ids, each file written atomically."""
    from privrec.data.atomic import write_atomic

    path = Path(path)
    r, c = np.nonzero(rows)
    frame = pd.DataFrame({"user_id": data.users.decode(r), "item_id": data.domain(aux).items.decode(rows[r, c]),
                          "timestamp": (c + 1).astype(np.float64)})
    write_atomic(pd.DataFrame({"user_id": data.users.decode(np.arange(1, len(rows)))}), path.with_suffix(".user"),
                 {"user_id": "token"})
    return write_atomic(frame, path, {"user_id": "token", "item_id": "token", "timestamp": "float"})


def read_published(path: str | Path, data: CrossDomainData, aux: str, max_len: int) -> np.ndarray:
    """Read an exported auxiliary file back into aligned rows (errors for unknown users/items).

    Shared users listed in the sibling ``.user`` file without ``.inter`` lines get empty rows
    (users the target does not know are ignored there: a RecBole ``.user`` may be a feature
    file); without it every shared user must have at least one line."""
    from privrec.data.atomic import read_atomic
    from privrec.data.crossdomain import align_published

    path = Path(path)
    frame, _ = read_atomic(path)
    missing = {"user_id", "item_id", "timestamp"} - set(frame.columns)
    if missing:
        raise ParameterError(f"{path}: missing fields {sorted(missing)}; an auxiliary file needs user_id, item_id and "
                             "timestamp (the position in the published row)")
    items = data.domain(aux).items.encode(frame["item_id"].astype(str).to_numpy(), strict=False)
    if (items == 0).any():
        bad = frame["item_id"][items == 0].astype(str).unique()[:5].tolist()
        raise ParameterError(f"{path}: items {bad} are not auxiliary-domain items")
    users = frame["user_id"].astype(str).to_numpy()
    listed = path.with_suffix(".user")
    all_users = np.unique(users)
    if listed.is_file():                 # users published with an empty row; others are ignored
        known = read_atomic(listed, usecols=["user_id"])[0]["user_id"].astype(str).to_numpy()
        known = known[data.users.encode(known, strict=False) > 0]
        all_users = np.union1d(all_users, known)
    stamps = frame["timestamp"].to_numpy(dtype=np.float64)
    if not np.isfinite(stamps).all() or (stamps % 1 != 0).any():
        raise ParameterError(f"{path}: timestamps must be whole positions 1..{max_len} in the published row")
    pos = stamps.astype(np.int64) - 1
    if (pos < 0).any() or (pos >= max_len).any():
        raise ParameterError(f"{path}: timestamps must be positions 1..{max_len}")
    code = np.searchsorted(all_users, users)
    if len(np.unique(code * max_len + pos)) < len(pos):
        raise DataFormatError(f"{path}: a user has two items at the same position (timestamp); each position of a "
                              "published row holds one item")
    rows = np.zeros((len(all_users), max_len), dtype=np.int64)
    rows[np.searchsorted(all_users, users), pos] = items
    return align_published(rows, all_users, data, data.domain(aux).items)


def write_published(path: str | Path, rows: np.ndarray, data: CrossDomainData, aux: str, cert: dict) -> Path:
    """Publish to disk: ``path`` (``.inter``) and its ``.user`` (RecBole atomic; name them
    ``NAME/NAME.inter`` and the folder is a RecBole dataset), then the certificate
    ``PATH.privacy.json``. Returns ``path``."""
    from privrec.utils.io import write_json_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    export_atomic(rows, data, aux, path)
    write_json_atomic(path.with_name(path.name + ".privacy.json"), cert)
    return path


def subsample_users(data: CrossDomainData, max_users: int, seed: int) -> CrossDomainData:
    """A seeded subset of shared users (quick runs); item codes are unchanged."""
    from privrec.data.crossdomain import DomainData
    from privrec.data.interactions import IdMap
    from privrec.data.splits import leave_one_out

    if max_users >= data.n_users:
        return data
    keep = np.sort(np.random.default_rng(seed).choice(np.arange(1, data.n_users + 1), max_users, replace=False))
    users = IdMap(np.concatenate([data.users.tokens[:1], data.users.tokens[keep]]), "user")
    domains = []
    for d in data.domains:
        seqs = d.sequences.take_rows(np.concatenate([[0], keep]))
        domains.append(DomainData(d.name, d.items, seqs, leave_one_out(seqs)))
    return CrossDomainData(users, (domains[0], domains[1]), {**data.params, "max_users": max_users})


def train_one(data: CrossDomainData, target: str, aux_rows: np.ndarray, variant: str, seed: int,
              cfg: PriCDSRConfig, log: Callable[[str], None] = print, state_path: Path | None = None) -> dict:
    """Train one model with validation-based early stopping; evaluate on test once.

    ``state_path``: training state saved every epoch, so a killed run resumes mid-training."""
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS}, got {variant!r}")
    seed_everything(seed)
    task = CrossDomainTask(data, target, aux_rows, cfg.max_len, cfg.window)
    model = DASL(data.n_users, [d.n_items for d in data.domains], target=data.names.index(target),
                 mode="single" if variant == "DASL-single" else "dual", embedding=cfg.embedding,
                 window=cfg.window, dropout=cfg.dropout, beta=cfg.beta, encoder=cfg.encoder)
    trainer = Trainer(model, task, replace(cfg.train, seed=seed), replace(SAMPLED, seed=seed),
                      log=lambda m: log(f"  [{variant} {target}<- seed {seed}] {m}"))
    fit = trainer.fit(state_path)
    test_sampled = trainer.test()
    test_full = evaluate(trainer.model, task, "test", FULL, trainer.device)
    return {"variant": variant, "target": target, "seed": seed, "fit": fit.to_dict(),
            "test": {**{f"{k} (sampled)": v for k, v in test_sampled.metrics.items()},
                     **{f"{k} (full)": v for k, v in test_full.metrics.items()}}}


def _run_key(target: str, aux: str, variant: str, eps: float | None, seed: int) -> str:
    return f"{target}<-{aux}|{variant}|{eps}|{seed}"


def _safe(name: str) -> str:
    """``name`` as a file name: letters, digits, '.', '-'; anything else becomes '_'."""
    return "".join(ch if ch.isalnum() or ch in ".-" else "_" for ch in name)


def _fingerprint(cfg: PriCDSRConfig, data: CrossDomainData) -> str:
    """What must match for a finished run to be reused (not the seeds or the ε list)."""
    d = cfg.to_dict()
    for k in ("seeds", "epsilons", "directions", "table3_directions", "epsilon"):
        d.pop(k)
    d["train"].pop("progress", None)
    d["train"].pop("epochs")          # the cap: whether a finished run still counts is decided by _reusable
    d["data"] = [data.statistics(), data.params]
    return config_hash(d)


def stopped_early(run: dict, train: TrainConfig) -> bool:
    """Did early stopping (not the epoch cap) end this run? Records written before the trainer
    stored the flag are judged from best epoch, epochs run and patience."""
    fit = run["fit"]
    if "stopped_early" in fit:
        return bool(fit["stopped_early"])
    ev = train.eval_every
    return fit["epochs_run"] // ev - fit["best_epoch"] // ev >= train.patience


LOSS_RISE = 1.2


def loss_rise_epoch(run: dict, factor: float = LOSS_RISE) -> int | None:
    """The first epoch after the training loss's minimum at which the loss reached ``factor`` ×
    that minimum (an optimisation blow-up, e.g. Adam at a high learning rate without gradient
    clipping), or None. The reported model is the best validation epoch: a rise after it only
    ended the run, one before it may have cost accuracy; the report says which."""
    history = [e for e in run["fit"].get("history", []) if e.get("loss") is not None]
    if not history:
        return None
    low = min(range(len(history)), key=lambda i: history[i]["loss"])
    limit = factor * history[low]["loss"]
    return next((e["epoch"] for e in history[low:] if e["loss"] >= limit), None)


def _reusable(run: dict, train: TrainConfig) -> bool:
    """A finished run counts under the cap ``train.epochs`` iff it stopped early within it, or it
    ran to exactly this cap (a run that hit a lower cap is continued from its state)."""
    n = run["fit"]["epochs_run"]
    return n <= train.epochs if stopped_early(run, train) else n == train.epochs


def _load_progress(path: Path, fingerprint: str) -> dict[str, dict]:
    import json

    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue                                  # a line cut by a crash: that run is redone
        if rec.get("fingerprint") == fingerprint:
            out[rec["key"]] = rec["run"]
    return out


def _append_progress(path: Path, fingerprint: str, key: str, run: dict) -> None:
    """One JSON line per finished run, flushed and fsynced (a crash loses at most the run in flight)."""
    import json
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    cut = False                                       # a line cut by a crash must not swallow this one
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            cut = fh.read(1) != b"\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(("\n" if cut else "") + json.dumps({"fingerprint": fingerprint, "key": key, "run": run}, default=float) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def reproduce(cfg: PriCDSRConfig, out_dir: str | Path, log: Callable[[str], None] = print,
              data: CrossDomainData | None = None, resume: bool = True,
              add_progress: Sequence[str | Path] = (), train_missing: bool = True,
              keep_capped_states: bool = True, command: str | None = None, workers: int = 1,
              threads: int = 1) -> dict:
    """Table II (both directions) and Table III (ε sweep) analogs, plot and report.

    ``keep_capped_states=False`` deletes the state of runs the epoch cap ended too (quick runs,
    where nobody will raise the cap). ``train_missing=False`` trains nothing: the report is
    written from the finished runs and lists the missing ones (a partial full run).

    Every finished training run is appended to ``OUT_DIR.progress.jsonl`` and the run in flight
    keeps its per-epoch training state in ``OUT_DIR.state/``; with ``resume`` a rerun with the
    same configuration reuses finished runs and continues the interrupted one from its last
    epoch, with the result an uninterrupted run would give (the full run takes CPU-hours).
    ``add_progress``: other progress files (e.g. seeds run in parallel processes) whose runs of
    the same configuration are reused too; they are copied into this run's progress file.

    Each perturbed auxiliary release is written to ``OUT_DIR.published/AUX-epsE-seedS/`` (RecBole
    atomic ``.inter`` + ``.user`` and the certificate ``.inter.privacy.json``) and the model
    trains on the rows read back from those files. ``command``: the command line, for the report.

    ``workers`` > 1 trains the missing runs in that many processes (``threads`` torch threads
    each); every run is seeded on its own, so the numbers are those of a sequential run."""
    from privrec.utils.io import atomic_dir

    t0 = time.perf_counter()
    for e in (cfg.epsilon, *cfg.epsilons):
        check_epsilon(e)
    if workers < 1 or threads < 1:
        raise ParameterError(f"workers and threads must be >= 1, got {workers} and {threads}")
    if not cfg.seeds or len(set(cfg.seeds)) != len(cfg.seeds):
        raise ParameterError(f"seeds must be distinct and at least one, got {list(cfg.seeds)}")
    if data is None:
        data = ml1m_cross_domain(load(cfg.dataset))
    if cfg.max_users:
        data = subsample_users(data, cfg.max_users, 0)
    stats = data.statistics()
    log("dataset: " + "; ".join(f"{s['domain']}: {s['users']:,} users, {s['items']:,} items, "
                                f"{s['interactions']:,} interactions" for s in stats))
    jobs: list[tuple[str, str, str, float | None]] = []
    for direction in cfg.directions:
        target, aux = parse_direction(direction, data)
        jobs += [(target, aux, "DASL-single", None), (target, aux, "DASL", None), (target, aux, "PriCDSR-DASL", cfg.epsilon)]
    for direction in cfg.table3_directions:
        target, aux = parse_direction(direction, data)
        jobs += [(target, aux, "PriCDSR-DASL", e) for e in cfg.epsilons if (target, aux, "PriCDSR-DASL", e) not in jobs]
    progress = Path(str(out_dir).rstrip("/") + ".progress.jsonl")
    states = Path(str(out_dir).rstrip("/") + ".state")
    published = Path(str(out_dir).rstrip("/") + ".published")
    fingerprint = _fingerprint(cfg, data)
    finished = _load_progress(progress, fingerprint) if resume else {}
    for other in add_progress:
        if not Path(other).is_file():
            raise ParameterError(f"{other}: no such progress file (written next to --out as OUT.progress.jsonl)")
        theirs = _load_progress(Path(other), fingerprint)
        added = [k for k in theirs if k not in finished]
        for key in added:
            finished[key] = theirs[key]
            _append_progress(progress, fingerprint, key, theirs[key])
        log(f"{other}: {len(added)} finished runs added" + ("" if theirs else
            " — none of its runs has this configuration (same --quick/--epochs and code settings?)"))
    stale = sorted(k for k, r in finished.items() if not _reusable(r, cfg.train))
    for key in stale:
        log(f"{key}: ran to an epoch cap of {finished[key]['fit']['epochs_run']} without stopping early; "
            f"continued under the cap of {cfg.train.epochs}")
        del finished[key]
    if finished:
        log(f"resuming: {len(finished)} finished runs read from {progress}")
    if not train_missing and not any(_run_key(t, a, v, e, sd) in finished for sd in cfg.seeds for t, a, v, e in jobs):
        raise ParameterError(f"no finished runs of this configuration in {progress}; run without --report-only first")
    missing: list[str] = []
    certificates: dict[str, dict] = {}
    results: dict[str, dict] = {}
    order: list[tuple] = []                     # (key, state path) of every run, seed-major
    pending: list[tuple] = []                   # runs to train: (key, target, aux, variant, eps, seed, rows, state)
    for seed in cfg.seeds:                      # seed-major: partial progress still fills whole tables
        for target, aux, variant, eps in jobs:
            rows, guarantee, _ = publish(data, aux, eps, cfg.max_len, seed)
            if guarantee is not None:
                # publish to disk, then train on what the files say: the model sees exactly the
                # released data (RecBole atomic files + certificate), nothing else
                name = _safe(f"{aux}-eps{eps}-seed{seed}")
                cert = certificate(guarantee, resolve_seed(seed),
                                   input_desc={"domain": aux, "rows": int(len(rows) - 1), "max_len": cfg.max_len,
                                               "split": "train items only (validation and test items withheld)"},
                                   output_desc={"folder": f"{published.name}/{name}", "format": "RecBole atomic",
                                                "files": [f"{name}.inter", f"{name}.user"],
                                                "interactions": int(np.count_nonzero(rows))})
                inter = write_published(published / name / f"{name}.inter", rows, data, aux, cert)
                rows = read_published(inter, data, aux, cfg.max_len)
                certificates.setdefault(f"{aux}:{eps}", cert)
            key = _run_key(target, aux, variant, eps, seed)
            # the state file's name carries the configuration fingerprint and the run (variant, ε,
            # seed: its published rows are a deterministic function of these), so it never resumes
            # another run
            state = states / (fingerprint + "-" + _safe(key) + ".pt")
            order.append((key, state))
            if key in finished:
                results[key] = finished[key]
                log(_result_line(finished[key]))
            elif not train_missing:
                missing.append(key)
            else:
                if not resume:
                    state.unlink(missing_ok=True)
                pending.append((key, target, aux, variant, eps, seed, rows, state))

    def done(key: str, aux: str, eps: float | None, r: dict) -> None:
        r.update(aux=aux, epsilon=eps)
        _append_progress(progress, fingerprint, key, r)
        results[key] = r
        log(_result_line(r))

    if workers > 1 and len(pending) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        quiet = replace(cfg, train=replace(cfg.train, progress=False))     # no interleaved progress bars
        log(f"training {len(pending)} runs in {min(workers, len(pending))} worker processes")
        with ProcessPoolExecutor(min(workers, len(pending)), mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_train_in_worker, data, target, rows, variant, seed, quiet, state, threads):
                       (key, aux, eps) for key, target, aux, variant, eps, seed, rows, state in pending}
            failed: BaseException | None = None
            for future in as_completed(futures):      # a failed run does not discard the others
                try:
                    done(*futures[future], future.result())
                except Exception as exc:
                    log(f"{futures[future][0]}: failed: {exc}")
                    failed = failed or exc
            if failed is not None:
                raise failed
    else:
        for key, target, aux, variant, eps, seed, rows, state in pending:
            done(key, aux, eps, train_one(data, target, rows, variant, seed, cfg, log, state))
    runs: list[dict] = []
    for key, state in order:
        if key not in results:
            continue
        # a capped run keeps its state (a higher cap continues it); this also removes a state
        # left by a crash after its run was stored
        if stopped_early(results[key], cfg.train) or not keep_capped_states:
            state.unlink(missing_ok=True)
        runs.append(results[key])
    if not runs:
        raise ParameterError(f"no finished runs of this configuration in {progress}; run without --report-only first")
    if states.is_dir():
        for tmp in states.glob(".*.tmp"):            # a save killed mid-write
            tmp.unlink(missing_ok=True)
        if not any(states.iterdir()):
            states.rmdir()
    result = {"kind": "pricdsr", "config": cfg.to_dict(), "statistics": stats, "runs": runs,
              "certificates": certificates, "summary": summarise(runs, cfg.train), "claim": claim_check(runs, cfg.epsilon),
              "sweep": sweep_check(runs, cfg.table3_directions),
              "missing": missing, "training_seconds": round(sum(r["fit"]["seconds"] for r in runs), 1),
              "seconds": round(time.perf_counter() - t0, 1), "command": command,
              "published": f"{published.name}/", "environment": environment()}
    with atomic_dir(out_dir) as tmp:
        from privrec.experiments.report import write_report

        write_report(tmp, result, markdown(result))
        plot(result, tmp / "privacy_utility.png")
    return result


def _result_line(r: dict) -> str:
    return (f"{r['variant']:13s} {r['target']}<-{r['aux']} eps={r['epsilon']} seed={r['seed']}: " +
            "  ".join(f"{k} {v:.4f}" for k, v in r["test"].items() if "@10" in k))


def _train_in_worker(data: CrossDomainData, target: str, rows: np.ndarray, variant: str, seed: int,
                     cfg: PriCDSRConfig, state: Path, threads: int) -> dict:
    """One training run in a worker process (``reproduce(workers=N)``); logs go to stderr."""
    import sys

    import torch

    torch.set_num_threads(threads)
    return train_one(data, target, rows, variant, seed, cfg, lambda m: print(m, file=sys.stderr, flush=True), state)


def summarise(runs: list[dict], train: TrainConfig) -> list[dict]:
    """Test metrics per (direction, model, ε), mean ± std over seeds; ``capped`` counts the runs
    that the epoch cap, not early stopping, ended."""
    groups: dict[tuple, list[dict]] = {}
    capped: dict[tuple, int] = {}
    for r in runs:
        k = (r["target"], r["aux"], r["variant"], r["epsilon"])
        groups.setdefault(k, []).append(r["test"])
        capped[k] = capped.get(k, 0) + (not stopped_early(r, train))
    return [{"target": t, "aux": a, "variant": v, "epsilon": e, "runs": len(ms), "capped": capped[(t, a, v, e)],
             "test": aggregate(ms)} for (t, a, v, e), ms in groups.items()]


CLAIM_METRICS = ("ndcg@10 (sampled)", "ndcg@10 (full)")


def claim_check(runs: list[dict], epsilon: float, metrics: tuple[str, ...] = CLAIM_METRICS) -> list[dict]:
    """The paper's claim, paired by seed: PriCDSR-DASL (ε) minus DASL-single ("beats the
    single-domain model") and minus DASL ("cost of privacy"), per direction and metric.

    Each row: the per-seed differences, their mean ± std, the mean difference relative to the
    reference's mean, and in how many seeds PriCDSR-DASL is ahead. Only seeds where both models
    finished are paired."""
    by = {(r["target"], r["aux"], r["variant"], r["epsilon"], r["seed"]): r["test"] for r in runs}
    out = []
    for target, aux in dict.fromkeys((r["target"], r["aux"]) for r in runs):
        for ref in ("DASL-single", "DASL"):
            seeds = sorted(sd for (t, a, v, e, sd) in by if (t, a, v, e) == (target, aux, "PriCDSR-DASL", epsilon)
                           and (t, a, ref, None, sd) in by)
            if not seeds:
                continue
            for m in metrics:
                ours = [by[(target, aux, "PriCDSR-DASL", epsilon, sd)][m] for sd in seeds]
                base = [by[(target, aux, ref, None, sd)][m] for sd in seeds]
                diff = aggregate({"d": o - b} for o, b in zip(ours, base))["d"]
                ref_mean = float(np.mean(base))
                out.append({"target": target, "aux": aux, "reference": ref, "metric": m, "seeds": seeds,
                            "difference": diff, "relative": diff["mean"] / ref_mean if ref_mean > 0 else None,
                            "ahead": int(sum(o > b for o, b in zip(ours, base))), "p_value": _paired_p(ours, base)})
    return out


def sweep_check(runs: list[dict], directions: Sequence[str], metrics: tuple[str, ...] = CLAIM_METRICS) -> list[dict]:
    """Table III read as evidence, per swept direction and metric.

    ``paired``: for every swept ε, the :func:`claim_check` rows (PriCDSR-DASL at that ε minus
    DASL-single and minus DASL, paired by seed). The smallest ε is the control: its auxiliary
    rows are almost pure noise, so a gain over DASL-single that stays there comes from DASL's
    extra input and capacity, not from the auxiliary domain's information.
    ``trend``: ordinary least squares of the metric on log10 ε over every finished PriCDSR-DASL
    run (one point per ε and seed): slope per decade of ε, its standard error and two-sided
    p-value (None below 3 runs or 2 distinct ε). A utility that rises with ε (less noise) has a
    positive slope."""
    from scipy import stats

    out = []
    for direction in directions:
        target, aux = direction.split("<-")
        ours = [r for r in runs if (r["target"], r["aux"], r["variant"]) == (target, aux, "PriCDSR-DASL")]
        epsilons = sorted({r["epsilon"] for r in ours})
        for m in metrics:
            paired = [dict(c, epsilon=e) for e in epsilons for c in claim_check(runs, e, (m,))
                      if (c["target"], c["aux"]) == (target, aux)]
            x = np.log10([r["epsilon"] for r in ours])
            y = np.array([r["test"][m] for r in ours])
            trend = None
            if len(ours) >= 3 and len(epsilons) >= 2:
                fit = stats.linregress(x, y)
                trend = {"slope_per_decade": float(fit.slope), "stderr": float(fit.stderr), "p_value": float(fit.pvalue),
                         "runs": len(ours)}
            out.append({"target": target, "aux": aux, "metric": m, "paired": paired, "trend": trend})
    return out


def _paired_p(ours: list[float], base: list[float]) -> float | None:
    """Two-sided paired t-test p-value (None below 2 pairs or when every difference is equal)."""
    from scipy import stats

    d = np.subtract(ours, base)
    if len(d) < 2 or np.ptp(d) == 0:
        return None
    return float(stats.ttest_rel(ours, base).pvalue)


_COLS = ("hr@5 (sampled)", "hr@10 (sampled)", "ndcg@5 (sampled)", "ndcg@10 (sampled)", "ndcg@10 (full)", "hr@10 (full)")


def _row(s: dict) -> list[str]:
    name = s["variant"] + (f" (ε={s['epsilon']:g})" if s["epsilon"] is not None else "") + ("†" if s.get("capped") else "")
    return [f"{s['target']} ← {s['aux']}", name, str(s.get("runs", ""))] + [pm(s["test"].get(c)) for c in _COLS]


def _signed(stat: dict) -> str:
    return f"{stat['mean']:+.4f}" + (f" ± {stat['std']:.4f}" if stat["n"] > 1 else "")


def markdown(result: dict) -> str:
    cfg = result["config"]
    summary = result["summary"]
    eps = cfg["epsilon"]
    t2 = [s for s in summary if s["variant"] != "PriCDSR-DASL" or s["epsilon"] == eps]
    t3 = [s for s in summary if (s["target"], s["aux"]) in {tuple(d.split("<-")) for d in cfg["table3_directions"]}
          and (s["variant"] == "PriCDSR-DASL" or s["variant"] == "DASL")]
    t3.sort(key=lambda s: (s["variant"] != "DASL", s["epsilon"] or 0))
    header = ["target ← aux", "model", "seeds", *_COLS]
    certs = result["certificates"]
    cert = certs.get(next((k for k in certs if k.endswith(f":{eps}")), ""), next(iter(certs.values()), None))
    lines = [
        f"# PriCDSR on {cfg['dataset']}" + (" split by genre" if cfg["dataset"] == "ml-1m" else ""),
        "",
        f"Seeds {list(cfg['seeds'])}; mean ± std over seeds (sample std). Test metrics; epochs selected on "
        f"validation sampled NDCG@10. 'sampled' = ranked against 100 popularity-sampled negatives (paper protocol); "
        f"'full' = ranked against all items, history masked. L = {cfg['max_len']}, T = {cfg['window']}, "
        f"encoder {cfg['encoder']}." + (f" Quick run on {cfg['max_users']} users." if cfg["max_users"] else ""),
        "",
    ]
    if result.get("missing"):
        n_done = len(result["runs"])
        lines += [f"**Partial report: {n_done} of {n_done + len(result['missing'])} training runs finished**; "
                  "rows average the seeds that have finished (column 'seeds'). Not yet run: "
                  + ", ".join(f"`{k}`" for k in result["missing"][:6])
                  + (f" and {len(result['missing']) - 6} more (`results.json` → `missing`)" if len(result["missing"]) > 6
                     else "") + ".", ""]
    lines += [
        "## Dataset (Table I analog)",
        "",
        markdown_table(["domain", "users", "items", "interactions", "avg. length"],
                       [[s["domain"], f"{s['users']:,}", f"{s['items']:,}", f"{s['interactions']:,}",
                         f"{s['avg_seq_len']:.1f}"] for s in result["statistics"]]),
        "",
        f"## Table II analog (PriCDSR at ε = {eps:g})",
        "",
        markdown_table(header, [_row(s) for s in t2]),
        "",
        "## Table III analog (ε sweep)",
        "",
        markdown_table(header, [_row(s) for s in t3]),
        "",
        *(["† the epoch cap, not early stopping, ended at least one of this row's runs (the model may still "
           "have been improving); raise `--epochs` and rerun: capped runs continue from their saved state.", ""]
          if any(s.get("capped") for s in summary) else []),
        "![privacy-utility](privacy_utility.png)",
        "",
        f"## The paper's claim, paired by seed (PriCDSR-DASL at ε = {eps:g} minus the reference)",
        "",
        "PriCDSR's claim is that PriCDSR-DASL beats DASL-single (a positive difference) while the "
        "auxiliary domain is protected; the difference to DASL is the cost of privacy.",
        "",
        markdown_table(["target ← aux", "reference", "metric", "difference (mean ± std)", "relative", "ahead in",
                        "p (paired t)"],
                       [[f"{c['target']} ← {c['aux']}", c["reference"], c["metric"], _signed(c["difference"]),
                         "–" if c["relative"] is None else f"{100 * c['relative']:+.1f}%",
                         f"{c['ahead']} of {len(c['seeds'])} seeds",
                         "–" if c.get("p_value") is None else f"{c['p_value']:.2f}"]
                        for c in result.get("claim", [])]),
        "",
        "p: two-sided paired t-test over seeds (2 degrees of freedom with 3 seeds: only large, consistent "
        "differences reach p < 0.05; read it with the per-seed signs).",
        "",
    ]
    lines += _sweep_markdown(result.get("sweep", []))
    lines += _runs_markdown(result["runs"])
    lines += [
        "## Privacy certificate of the published auxiliary rows",
        "",
    ]
    if cert:
        g = cert["guarantee"]
        claim = g.get("paper_claim") or {}
        lines += [f"- {cert['summary']}", f"- unit of privacy: {g['unit_of_privacy']}",
                  f"- paper's claim: ε = {claim.get('epsilon', '–')} ({claim.get('reason', '')})",
                  "- full certificates (every ε): `results.json` → `certificates`",
                  f"- published auxiliary data (RecBole atomic files + certificate per domain, ε and seed): "
                  f"`{result.get('published', 'OUT.published/')}` next to this report folder", ""]
    lines += ["## Commands", ""]
    if cfg["dataset"] == "ml-1m":
        lines += ["Reproduce: `privrec reproduce pricdsr" + (" --quick" if cfg["max_users"] else "") + "`"
                  + ("" if cfg["max_users"] else " (each seed can run in its own process: `--seeds 1 --out DIR-s1`, "
                     "then `--report-only --add-progress DIR-s1.progress.jsonl`)"), ""]
    if result.get("command"):
        lines += [f"This report was written by: `{result['command']}`", ""]
    lines += [f"Training time summed over the runs: {result.get('training_seconds', 0) / 3600:.1f} h of wall-clock "
              f"(this invocation: {result['seconds']:.0f} s)."]
    return "\n".join(lines) + "\n"


def _paired_cell(c: dict | None) -> str:
    if c is None:
        return "–"
    p = "" if c.get("p_value") is None else f", p = {c['p_value']:.2f}"
    return f"{_signed(c['difference'])} ({c['ahead']} of {len(c['seeds'])}{p})"


def _runs_markdown(runs: list[dict]) -> list[str]:
    """One row per training run: where it stopped, its validation and test NDCG@10, and whether
    its training loss blew up (the per-seed spread behind every mean above)."""
    rows = []
    for r in sorted(runs, key=lambda r: (r["target"], r["variant"] != "DASL-single", r["variant"] != "DASL",
                                         r["epsilon"] or 0, r["seed"])):
        f = r["fit"]
        losses = [e["loss"] for e in f.get("history", []) if e.get("loss") is not None]
        rise = loss_rise_epoch(r)
        rows.append([f"{r['target']} ← {r['aux']}", r["variant"], "–" if r["epsilon"] is None else f"{r['epsilon']:g}",
                     str(r["seed"]), f"{f['best_epoch']} of {f['epochs_run']}",
                     "–" if not f.get("best_valid") else f"{f['best_valid']['metrics']['ndcg@10']:.4f}",
                     f"{r['test']['ndcg@10 (sampled)']:.4f}", f"{r['test']['ndcg@10 (full)']:.4f}",
                     (f"{min(losses):.2f} → {losses[-1]:.2f}" if losses else "–"),
                     "–" if rise is None else f"{rise} ‡" + (" (before the best)" if rise <= f["best_epoch"] else "")])
    return ["## Every run", "",
            markdown_table(["target ← aux", "model", "ε", "seed", "best epoch", "valid NDCG@10", "test NDCG@10 sampled",
                            "test NDCG@10 full", "train loss min → last", "loss blew up at epoch"], rows), "",
            f"‡ the first epoch after its minimum at which the training loss reached {LOSS_RISE:g}× that minimum "
            "(an optimisation blow-up). The model reported is the best validation epoch, so a blow-up after it "
            "only ended the run; one at or before it may have cost accuracy.", ""]


def _sweep_markdown(sweep: list[dict]) -> list[str]:
    """The ε sweep, paired by seed against both references, and its trend in log ε."""
    if not sweep:
        return []
    lines = ["## The ε sweep, paired by seed (PriCDSR-DASL at each ε minus the reference)", "",
             "Cells: mean difference ± std over seeds (seeds ahead of the reference, paired t p). The smallest ε "
             "is the control: its auxiliary rows are almost pure noise, so a gain over DASL-single that persists "
             "there is not the auxiliary domain's information. Trend: least squares of the metric on log10 ε "
             "over every run (slope per decade of ε ± standard error, two-sided p).", ""]
    rows = []
    for s in sweep:
        for e in sorted({c["epsilon"] for c in s["paired"]}):
            cell = {c["reference"]: c for c in s["paired"] if c["epsilon"] == e}
            rows.append([f"{s['target']} ← {s['aux']}", s["metric"], f"{e:g}", str(max(len(c["seeds"]) for c in cell.values())),
                         _paired_cell(cell.get("DASL-single")), _paired_cell(cell.get("DASL"))])
    lines += [markdown_table(["target ← aux", "metric", "ε", "seeds", "minus DASL-single", "minus DASL"], rows), ""]
    for s in sweep:
        t = s["trend"]
        if t:
            lines.append(f"- trend, {s['target']} ← {s['aux']}, {s['metric']}: {t['slope_per_decade']:+.4f} ± "
                         f"{t['stderr']:.4f} per decade of ε over {t['runs']} runs (p = {t['p_value']:.2f})")
    return lines + [""]


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = result["config"]
    directions = cfg["table3_directions"] or cfg["directions"]       # no ε sweep: plot Table II's points
    fig, axes = plt.subplots(1, len(directions), figsize=(5.5 * len(directions), 4), squeeze=False)
    for ax, direction in zip(axes[0], directions):
        target, aux = direction.split("<-")
        rel = [s for s in result["summary"] if s["target"] == target and s["aux"] == aux]
        pts = sorted((s["epsilon"], s["test"]["ndcg@10 (sampled)"]) for s in rel if s["variant"] == "PriCDSR-DASL")
        if pts:
            xs = [p[0] for p in pts]
            ax.errorbar(xs, [p[1]["mean"] for p in pts], yerr=[p[1]["std"] for p in pts], marker="o",
                        label="PriCDSR-DASL (mean ± std)")
            each = [(r["epsilon"], r["test"]["ndcg@10 (sampled)"]) for r in result["runs"]
                    if (r["target"], r["aux"], r["variant"]) == (target, aux, "PriCDSR-DASL")]
            ax.scatter([e for e, _ in each], [v for _, v in each], marker="x", color="tab:blue", alpha=0.5,
                       label="one seed")      # a mean ± std hides a bimodal spread
            ax.set_xscale("log")
        for variant, style in (("DASL", "--"), ("DASL-single", ":")):
            ref = next((s for s in rel if s["variant"] == variant), None)
            if ref:
                ax.axhline(ref["test"]["ndcg@10 (sampled)"]["mean"], linestyle=style, color="k" if variant == "DASL" else "grey",
                           label=variant)
        ax.set_xlabel("ε of the mechanism (paper's budget; certified ε-SDP = 2ε)")
        ax.set_ylabel("NDCG@10 (sampled, test)")
        ax.set_title(f"{target} ← {aux}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


QUICK = dict(seeds=(0,), max_users=1200, max_len=30, epsilons=(1.0, 10.0, 50.0),
             train=TrainConfig(epochs=4, batch_size=64, lr=5e-3, patience=2, select_metric="ndcg@10", grad_clip=None,
                               progress=False))
