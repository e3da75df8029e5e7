"""PriCDSR end to end: ``publish(aux, sdp, ε) → train(target, aux′) → evaluate(target)``.

The auxiliary domain's train rows (never its validation or test items) are front-padded to
``max_len``, perturbed with the SDP mechanism and written as a release folder
(:mod:`privrec.release.crossdomain`); an unchanged cross-domain model (DASL) trains on the rows
read back from it. The model cannot tell perturbed from clean input: the only difference
between "DASL" and "PriCDSR-DASL" is which rows were published.

Protocol (PriCDSR Sec. VI): leave-one-out per domain; HR@5/10 and NDCG@5/10 against 100
popularity-sampled negatives (labelled "sampled"), plus full-ranking NDCG@10/HR@10; epochs
selected on validation (sampled NDCG@10) only; mean ± std over seeds.

This module declares the grid (Table II: three models in both directions; Table III: an ε
sweep) and how one run trains; the runner (:mod:`privrec.experiments.runner`) resumes,
parallelises and records; :mod:`privrec.experiments.pricdsr_report` writes the tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from privrec.data.crossdomain import CrossDomainData, ml1m_cross_domain, subsample_users
from privrec.data.tables import load
from privrec.data.testbed import identity
from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.experiments import runner
from privrec.experiments.parallel import RayTarget
from privrec.experiments.runner import RunRecord, RunSpec
from privrec.models.dasl import DASL
from privrec.privacy.validate import check_epsilon
from privrec.release.crossdomain import domain_rows, noise_rows, publish_domain_rows, read_domain_rows
from privrec.training.tasks import CrossDomainTask
from privrec.training.trainer import TrainConfig, Trainer
from privrec.utils.repro import config_hash, seed_torch

# "Noise (control)": DASL on auxiliary rows of pure noise of the release's shape (the information control of
# the positive-control gate, :mod:`privrec.experiments.gate`)
VARIANTS = ("DASL-single", "DASL", "Noise (control)", "PriCDSR-DASL")
NOISE = "Noise (control)"
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
    testbed: str = "dense"            # privrec.data.testbed: which users of each target domain are cold-start

    def to_dict(self) -> dict:
        return asdict(self)


# The sweep on a cold testbed: the informative budgets only (at epsilon >= 20 the mechanism keeps >= 99.999% of the
# cells and PriCDSR-DASL equals DASL: docs/pricdsr.md), plus 6, where the share of auxiliary cells kept (15.5% of
# drama's, 2,194 items) falls inside the paper's Amazon runs at its epsilon = 10 (8.5-27%)
TESTBED_EPSILONS = (1.0, 2.0, 5.0, 6.0, 10.0)
QUICK_TESTBED_EPSILONS = (1.0, 6.0, 10.0)

QUICK = dict(seeds=(0,), max_users=1200, max_len=30, epsilons=(1.0, 10.0, 50.0),
             train=TrainConfig(epochs=4, batch_size=64, lr=5e-3, patience=2, select_metric="ndcg@10", grad_clip=None,
                               progress=False))


def parse_direction(direction: str, data: CrossDomainData) -> tuple[str, str]:
    """'target<-aux' → (target, aux), checked against the data's domain names."""
    parts = direction.split("<-")
    if len(parts) != 2 or set(parts) != set(data.names):
        raise ParameterError(f"direction must be 'target<-aux' over the domains {data.names}, got {direction!r}")
    return parts[0], parts[1]


def train_one(data: CrossDomainData, target: str, aux_rows: np.ndarray, variant: str, seed: int,
              cfg: PriCDSRConfig, log: Callable[[str], None] = print, state_path: Path | None = None) -> dict:
    """Train one model with validation-based early stopping; evaluate on test once.

    ``state_path``: training state saved every epoch, so a killed run resumes mid-training.
    Returns {"fit": ..., "metrics": {"sampled": {...}, "full": {...}}}."""
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS}, got {variant!r}")
    seed_torch(seed)
    task = CrossDomainTask(data, target, aux_rows, cfg.max_len, cfg.window)
    model = DASL(data.n_users, [d.n_items for d in data.domains], target=data.names.index(target),
                 mode="single" if variant == "DASL-single" else "dual", embedding=cfg.embedding,
                 window=cfg.window, dropout=cfg.dropout, beta=cfg.beta, encoder=cfg.encoder)
    trainer = Trainer(model, task, replace(cfg.train, seed=seed), replace(SAMPLED, seed=seed),
                      log=lambda m: log(f"  [{variant} {target}<- seed {seed}] {m}"))
    fit = trainer.fit(state_path)
    sampled = trainer.test()
    full = evaluate(trainer.model, task, "test", FULL, trainer.device)
    return {"fit": fit.to_dict(), "metrics": {"sampled": sampled.metrics, "full": full.metrics}}


def run_key(target: str, aux: str, variant: str, eps: float | None, seed: int) -> str:
    return f"{target}<-{aux}|{variant}|{eps}|{seed}"


def release_name(aux: str, eps: float, seed: int) -> str:
    return runner.safe_name(f"{aux}-eps{eps}-seed{seed}")


@dataclass
class PriCDSRExperiment:
    """Table II (three models, every direction) and Table III (ε sweep) as a runner experiment."""

    cfg: PriCDSRConfig
    data: CrossDomainData              # both domains whole; each direction's testbed is cut from it
    published: Path                    # OUT.published/: one release folder per (aux, ε, seed)

    def data_for(self, target: str) -> CrossDomainData:
        """The data a run with this target trains and is evaluated on: the testbed cut of ``target``
        (the auxiliary domain, and so every release, is the whole domain whatever the testbed)."""
        from privrec.data.testbed import apply_shared

        cache = self.__dict__.setdefault("_by_target", {})
        if target not in cache:
            cache[target] = apply_shared(self.data, target, self.cfg.testbed)
        return cache[target]

    def grid(self) -> list[tuple[str, str, str, float | None]]:
        jobs: list[tuple[str, str, str, float | None]] = []
        for direction in self.cfg.directions:
            target, aux = parse_direction(direction, self.data)
            jobs += [(target, aux, "DASL-single", None), (target, aux, "DASL", None), (target, aux, NOISE, None),
                     (target, aux, "PriCDSR-DASL", self.cfg.epsilon)]
        for direction in self.cfg.table3_directions:
            target, aux = parse_direction(direction, self.data)
            jobs += [(target, aux, "PriCDSR-DASL", e) for e in self.cfg.epsilons
                     if (target, aux, "PriCDSR-DASL", e) not in jobs]
        return jobs

    def runs(self) -> list[RunSpec]:          # seed-major: partial progress still fills whole tables
        return [RunSpec(run_key(t, a, v, e, s), s, {"target": t, "aux": a, "variant": v, "epsilon": e})
                for s in self.cfg.seeds for t, a, v, e in self.grid()]

    def fingerprint(self) -> str:
        """What must match for a finished run to be reused (not the seeds or the ε list)."""
        d = self.cfg.to_dict()
        for k in ("seeds", "epsilons", "directions", "table3_directions", "epsilon"):
            d.pop(k)
        d["train"].pop("progress", None)
        d["train"].pop("epochs")      # the cap: whether a finished run still counts is decided by the runner
        d["data"] = [self.data.statistics(), self.data.params]
        d["testbed"] = identity(self.cfg.testbed)
        return config_hash(d)

    def cap(self) -> tuple[int, int, int]:
        return self.cfg.train.epochs, self.cfg.train.patience, self.cfg.train.eval_every

    def _release(self, labels: dict, seed: int) -> Path:
        name = release_name(labels["aux"], labels["epsilon"], seed)
        return self.published / name

    def prepare(self, spec: RunSpec, log: Callable[[str], None]) -> None:
        """Publish the auxiliary rows this run trains on (a release folder; the research seed is recorded)."""
        if spec.labels["epsilon"] is None:
            return
        publish_domain_rows(self._release(spec.labels, spec.seed), self.data, spec.labels["aux"], "sdp",
                            spec.labels["epsilon"], self.cfg.max_len, spec.seed, record_seed=True,
                            source=self.cfg.dataset)

    def train(self, spec: RunSpec, state: Path, log: Callable[[str], None]) -> RunRecord:
        lab = spec.labels
        if lab["variant"] == NOISE:
            rows = noise_rows(self.data, lab["aux"], self.cfg.max_len, spec.seed)
        elif lab["epsilon"] is None:
            rows = domain_rows(self.data, lab["aux"], self.cfg.max_len)
        else:     # train on what the release says: the model sees exactly the published data
            rows = read_domain_rows(self._release(lab, spec.seed), self.data, lab["aux"], self.cfg.max_len)
        out = train_one(self.data_for(lab["target"]), lab["target"], rows, lab["variant"], spec.seed, self.cfg, log,
                        state)
        return RunRecord(spec.key, spec.seed, dict(lab), out["fit"], out["metrics"])


def result_line(r: RunRecord) -> str:
    lab = r.labels
    return (f"{lab['variant']:13s} {lab['target']}<-{lab['aux']} eps={lab['epsilon']} seed={r.seed}: " +
            "  ".join(f"{k} ({p}) {v:.4f}" for p, ms in r.metrics.items() for k, v in ms.items() if "@10" in k))


def load_data(cfg: PriCDSRConfig, data: CrossDomainData | None = None) -> CrossDomainData:
    if data is None:
        data = ml1m_cross_domain(load(cfg.dataset))
    return subsample_users(data, cfg.max_users, 0) if cfg.max_users else data


def reproduce(cfg: PriCDSRConfig, out_dir: str | Path, log: Callable[[str], None] = print,
              data: CrossDomainData | None = None, resume: bool = True,
              add_progress: Sequence[str | Path] = (), train_missing: bool = True,
              keep_capped_states: bool = True, command: str | None = None, workers: int = 1,
              threads: int = 1, ray: RayTarget | None = None) -> dict:
    """Table II (both directions) and Table III (ε sweep) analogs, plot and report in ``out_dir``.

    Finished runs go to ``OUT_DIR.progress.jsonl``, the run in flight keeps its per-epoch state in
    ``OUT_DIR.state/``, releases go to ``OUT_DIR.published/AUX-epsE-seedS/`` (see the runner for
    resume, ``add_progress``, ``workers``; ``train_missing=False`` writes the report from the
    finished runs and lists the missing ones; ``keep_capped_states=False`` drops the state of
    runs the epoch cap ended, for quick runs nobody will continue)."""
    from privrec.data.testbed import get
    from privrec.experiments import pricdsr_report as R

    t0 = time.perf_counter()
    get(cfg.testbed)
    for e in (cfg.epsilon, *cfg.epsilons):
        check_epsilon(e)
    if not cfg.seeds or len(set(cfg.seeds)) != len(cfg.seeds):
        raise ParameterError(f"seeds must be distinct and at least one, got {list(cfg.seeds)}")
    data = load_data(cfg, data)
    stats = data.statistics()
    log("dataset: " + "; ".join(f"{s['domain']}: {s['users']:,} users, {s['items']:,} items, "
                                f"{s['interactions']:,} interactions" for s in stats))
    return runner.reproduce_grid(cfg, lambda c, pub: PriCDSRExperiment(c, data, pub), R, out_dir, log=log,
                                 describe=result_line, started=t0, resume=resume, add_progress=add_progress,
                                 train_missing=train_missing, keep_capped_states=keep_capped_states,
                                 command=command, workers=workers, threads=threads, ray=ray)
