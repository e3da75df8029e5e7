"""Randomised-response sequential recommendation end to end (Mu & Lim, CIKM'25): Fig. 1 and Fig. 2 analogs.

``publish(histories, rr, ε) → train(model reads the release, labels true) → evaluate``.

* **Release.** Each user's history before the test item is perturbed once on the user side
  (:mod:`privrec.release.histories`) and written as a release folder per (ε, alternatives,
  window position, seed); every method of that cell trains on the *same* release (paired seeds).
  Users outside Thm 3.1's validity (keep < 1/2) do not publish (``short="refuse"``).
* **Methods.** GRU4Rec and BERT4Rec read the release as is; RR-BERT4Rec (the paper's method) reads
  it through a merged vocabulary learned on the released training prefixes
  (:class:`~privrec.models.bert4rec.MergedBERT4Rec`). Ablations: ``causal`` (bidirectional off),
  and BERT4Rec is RR-BERT4Rec with merging off.
* **Protocol** (the paper's, from BERT4Rec [32]): ML-1M with every rating as an interaction (no
  filtering: each user has >= 20), leave-one-out, the test item ranked against 100
  popularity-sampled negatives (HR@1, NDCG@5 the paper's metrics; also @10), plus full ranking
  with the history masked. Epochs selected on validation sampled NDCG@5 only.

Grid: Fig. 1 (methods × {non-private, ε...} × seeds), the ablations at one ε, the alternatives
ablation (semantic nearest neighbour = the paper, privrec's injective matching, a random cycle),
and Fig. 2 (RR-BERT4Rec with RQ2's strongly obfuscated window slid from oldest to newest).
The runner (:mod:`privrec.experiments.runner`) resumes, parallelises and records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from privrec.data.preprocess import Preprocessing
from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig
from privrec.experiments import runner
from privrec.experiments.caps import train_cap
from privrec.experiments.parallel import RayTarget
from privrec.experiments.rr_release import (
    ALTERNATIVES,
    alternative_map,
    check_release,
    item_embeddings,
    publish_split,
    read_private,
)
from privrec.experiments.runner import RunRecord, RunSpec
from privrec.experiments.sequential import DEFAULT_MODEL_CONFIG
from privrec.privacy.validate import check_epsilon
from privrec.training.trainer import TrainConfig
from privrec.utils.repro import config_hash, seed_torch

# method -> (model, model-config overrides)
METHODS: dict[str, tuple[str, dict]] = {
    "GRU4Rec": ("gru4rec", {}),
    "BERT4Rec": ("bert4rec", {}),
    "RR-BERT4Rec": ("rr-bert4rec", {}),
    "RR-BERT4Rec (unidirectional)": ("rr-bert4rec", {"causal": True}),
    "BERT4Rec (unidirectional)": ("bert4rec", {"causal": True}),
}
WINDOW_USERS = "window users"          # Fig. 2's subset: users whose history has the obfuscated window
# method -> training settings of its own (the rest: RRConfig.train). The transformers warm the lr up over their
# first 200 steps (~2 epochs; BERT4Rec's own recipe has 100): without it, RR-BERT4Rec at lr 3e-3 sat at the
# popularity level for a seed-dependent 3-12 epochs (seed 1 non-private: validation NDCG@5 0.068 at epoch 10,
# 0.268 on test after the then 40-epoch cap; with 200 warmup steps, same init: 0.243 at epoch 10). BERT4Rec gets
# the same recipe so the comparison stays fair (docs/rr.md). GRU4Rec trains with RRConfig.train as it is (its
# former own lr 3e-3 became the base lr)
WARMUP = {"warmup_steps": 200}
TRAIN_OVERRIDES: dict[str, dict] = {m: WARMUP for m in METHODS if METHODS[m][0] in ("bert4rec", "rr-bert4rec")}
SAMPLED = EvalConfig(mode="sampled", n_negatives=100, sampler="popularity", ks=(1, 5, 10), metrics=("hr", "ndcg"))
FULL = EvalConfig(mode="full", ks=(1, 5, 10), metrics=("hr", "ndcg"), mask_history=True)


@dataclass(frozen=True)
class RRConfig:
    dataset: str = "ml-1m"
    preprocessing: Preprocessing = field(default_factory=Preprocessing)    # every rating, as BERT4Rec's ML-1M
    max_len: int = 50                 # tokens read (L = 50 rather than BERT4Rec's 200: 4x cheaper epochs)
    vocab_ratio: float = 1.5          # merged vocabulary / items (the paper's Steam: 20,000 tokens, 13,047 items)
    short: str = "refuse"             # users with keep < 1/2: refuse (default) or publish as the paper ("paper")
    # lr 3e-3, picked on validation (docs/rr.md): BERT4Rec seed 0 at lr 1e-3 was still rising at its 60-epoch cap
    # (best validation NDCG@5 0.405 @ 59); at 3e-3 it passed 0.405 at epoch 27 and reached 0.420 @ 37.
    # A fixed budget of 100 epochs, no early stopping, the best validated epoch tested (since 2026-11-28): under
    # patience 5, then 10, the transformers' test scores followed where each run happened to stop more than eps
    # (BERT4Rec non-private: seed 0 ran to 92, 0.4315 sampled NDCG@5; seed 1 stopped at 45 behind one high
    # validation at 35, 0.4040), while most runs were still rising at 100 (docs/rr.md)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=100, batch_size=256, lr=3e-3, patience=None,
                                                                  select_metric="ndcg@5"))
    epsilons: tuple[float, ...] = (0.1, 0.01, 0.001, 0.0001)
    methods: tuple[str, ...] = ("GRU4Rec", "BERT4Rec", "RR-BERT4Rec")
    seeds: tuple[int, ...] = (0, 1, 2)
    alternatives: str = "injective"
    ablation_epsilon: float = 0.001
    ablation_methods: tuple[str, ...] = ("RR-BERT4Rec (unidirectional)", "BERT4Rec (unidirectional)")
    alternatives_ablation: tuple[str, ...] = ("nearest", "random")
    positional_epsilon: float = 0.0001
    positions: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    p_outside: float = 0.1
    window_fraction: float = 0.2
    max_users: int | None = None      # quick runs: the first users (codes) only

    def __post_init__(self) -> None:
        for e in (*self.epsilons, self.ablation_epsilon, self.positional_epsilon):
            check_epsilon(e)
        unknown = [m for m in (*self.methods, *self.ablation_methods) if m not in METHODS]
        if unknown:
            raise ParameterError(f"unknown methods {unknown}; use some of {list(METHODS)}")
        bad = [a for a in (self.alternatives, *self.alternatives_ablation) if a not in ALTERNATIVES]
        if bad:
            raise ParameterError(f"unknown alternatives {bad}; use some of {ALTERNATIVES}")
        if not 0 <= self.p_outside < 0.5:
            raise ParameterError(f"p_outside (RQ2's p1) must lie in [0, 1/2), got {self.p_outside}: the window's p2 "
                                 "must exceed it and stay below 1/2 (Thm 3.1)")
        if not 0 < self.window_fraction < 1:
            raise ParameterError(f"window_fraction (RQ2's dn / n) must lie in (0, 1), got {self.window_fraction}")
        bad_pos = [p for p in self.positions if not 0 <= p <= 1]
        if bad_pos:
            raise ParameterError(f"window positions must lie in [0, 1] (0 = oldest items, 1 = most recent), got {bad_pos}")
        if not self.vocab_ratio >= 1:
            raise ParameterError(f"vocab_ratio must be >= 1 (the vocabulary holds every item), got {self.vocab_ratio}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ParameterError(f"seeds must be distinct and at least one, got {list(self.seeds)}")

    def to_dict(self) -> dict:
        return asdict(self)


QUICK = dict(max_users=400, max_len=20, epsilons=(0.1, 0.001), seeds=(0,), positions=(0.0, 1.0),
             train=TrainConfig(epochs=2, batch_size=128, lr=1e-3, patience=2, select_metric="ndcg@5", progress=False))


def run_key(method: str, eps: float | None, alt: str | None, pos: float | None, seed: int) -> str:
    return f"{method}|{eps}|{alt}|{pos}|{seed}"


@dataclass
class RRExperiment:
    cfg: RRConfig
    inter: object                      # Interactions after preprocessing
    split: object                      # leave-one-out Split
    published: Path                    # OUT.published/: one release per (ε, alternatives, position, seed)
    _maps: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        n = self.split.history("test").lengths
        n = n[n > 0]
        if self.cfg.positions and len(n) and np.floor(self.cfg.window_fraction * n.min() + 0.5) < 1:
            raise ParameterError(f"window_fraction={self.cfg.window_fraction:g} is too small for the shortest history "
                                 f"({int(n.min())} items): round(window_fraction n) = 0, so its window would be widened "
                                 f"to 1 item, not window_fraction n; use window_fraction >= {0.5 / n.min():.3g}, or no "
                                 "positions")

    def grid(self) -> list[tuple[str, float | None, str | None, float | None]]:
        c = self.cfg
        cells = [(m, None, None, None) for m in c.methods]
        cells += [(m, e, c.alternatives, None) for e in c.epsilons for m in c.methods]
        cells += [(m, c.ablation_epsilon, c.alternatives, None) for m in c.ablation_methods]
        cells += [("RR-BERT4Rec", c.ablation_epsilon, a, None) for a in c.alternatives_ablation]
        cells += [("RR-BERT4Rec", c.positional_epsilon, c.alternatives, p) for p in c.positions]
        return list(dict.fromkeys(cells))

    def runs(self) -> list[RunSpec]:
        return [RunSpec(run_key(m, e, a, p, s), s, {"method": m, "epsilon": e, "alternatives": a, "position": p})
                for s in self.cfg.seeds for m, e, a, p in self.grid()]

    def fingerprint(self) -> str:
        # what a run's key already names (method, ε, alternatives, position) is not part of the fingerprint
        return runner.grid_fingerprint(self.cfg, ("seeds", "epsilons", "methods", "ablation_methods",
                                                  "alternatives_ablation", "positions", "alternatives",
                                                  "ablation_epsilon", "positional_epsilon"), self.inter.summary())

    def fingerprint_of(self, spec: RunSpec) -> str:
        """The grid's fingerprint, plus the method's own training settings where it has some
        (:data:`TRAIN_OVERRIDES`), so changing them redoes only that method's runs."""
        own = TRAIN_OVERRIDES.get(spec.labels["method"])
        return self.fingerprint() if not own else config_hash({"grid": self.fingerprint(), "train": own})

    def train_config(self, method: str):
        from dataclasses import replace

        return replace(self.cfg.train, **TRAIN_OVERRIDES.get(method, {}))

    def cap(self) -> tuple[int, int, int]:
        return train_cap(self.cfg.train)

    # ---- releases
    @cached_property
    def embeddings(self) -> np.ndarray:
        return item_embeddings(self.inter)

    def alt_map(self, kind: str, seed: int):
        """The alternative map of ``kind``: built once per experiment (the random cycle per seed)."""
        key = (kind, seed) if kind == "random" else kind
        if key not in self._maps:
            self._maps[key] = alternative_map(kind, self.inter.n_items, lambda: self.embeddings, seed)
        return self._maps[key]

    def release(self, labels: dict, seed: int) -> Path:
        pos = labels["position"]
        name = f"eps{labels['epsilon']}-{labels['alternatives']}" + ("" if pos is None else f"-pos{pos}")
        return self.published / runner.safe_name(f"{name}-seed{seed}")

    def release_of(self, spec: RunSpec) -> Path | None:
        """The release folder this run reads (private methods), None for the non-private ones."""
        return None if spec.labels["epsilon"] is None else self.release(spec.labels, spec.seed)

    def positional(self, pos: float | None) -> dict | None:
        if pos is None:
            return None
        return {"p_outside": self.cfg.p_outside, "window_fraction": self.cfg.window_fraction, "window_position": pos}

    def window_users(self, epsilon: float) -> np.ndarray:
        """Bool per user row: RQ2's variant at ``epsilon`` gives this user's history its strongly
        obfuscated window (p2 > p1); the others get the uniform keep and carry no position effect."""
        from privrec.privacy.rr import has_window

        return has_window(self.split.history("test").lengths, epsilon, p_outside=self.cfg.p_outside,
                          window_fraction=self.cfg.window_fraction)

    def prepare(self, spec: RunSpec, log: Callable[[str], None]) -> None:
        """Publish the release this run reads (once per cell and seed; shared by the methods)."""
        from privrec.release.folder import is_release

        lab = spec.labels
        if lab["epsilon"] is None:
            return
        folder, alt = self.release(lab, spec.seed), lab["alternatives"]
        settings = dict(alternatives=alt, short=self.cfg.short, positional=self.positional(lab["position"]),
                        source=self.cfg.dataset)
        if is_release(folder):
            check_release(folder, lab["epsilon"], **settings)
            return
        g = publish_split(folder, self.inter, self.split, self.alt_map(alt, spec.seed), lab["epsilon"], spec.seed,
                          **settings)
        log(f"published {folder.name}: {g.summary().splitlines()[0]}")

    # ---- training
    def train(self, spec: RunSpec, state: Path, log: Callable[[str], None]) -> RunRecord:
        from privrec.models import build_on
        from privrec.training.tasks import task_for

        lab, cfg = spec.labels, self.cfg
        private = None if lab["epsilon"] is None else read_private(self.release(lab, spec.seed), self.inter, self.split)
        seed_torch(spec.seed)
        model_name, overrides = METHODS[lab["method"]]
        mc = {**DEFAULT_MODEL_CONFIG[model_name], **overrides, "max_len": cfg.max_len}
        if model_name == "rr-bert4rec":
            mc["vocab_ratio"] = cfg.vocab_ratio
        n = self.inter.n_items
        model = build_on(model_name, self.split.train if private is None else private.train, n_items=n, **mc)
        task = task_for(model, self.split, n, cfg.max_len, private=private)
        pos = "" if lab["position"] is None else f" window@{lab['position']}"
        tag = f"  [{lab['method']} eps={lab['epsilon']} {lab['alternatives'] or ''}{pos} seed {spec.seed}]"
        subsets = None
        if lab["position"] is not None:         # Fig. 2: also the users whose history got a window
            subsets = {WINDOW_USERS: self.window_users(lab["epsilon"]) & private.published}
        fit, metrics = runner.fit_and_test(model, task, self.train_config(lab["method"]), SAMPLED, FULL, spec.seed,
                                           state, tag, log, subsets)
        extra = {"published_users": None if private is None else private.n_published}
        if subsets:
            extra["window_users"] = int(subsets[WINDOW_USERS].sum())
        if model_name == "rr-bert4rec":
            extra["vocab_size"] = model.merges.vocab_size
        return RunRecord(spec.key, spec.seed, dict(lab), fit, metrics, extra=extra)


def result_line(r: RunRecord) -> str:
    lab = r.labels
    return (f"{lab['method']:29s} eps={lab['epsilon']} alt={lab['alternatives']} pos={lab['position']} seed={r.seed}: "
            + "  ".join(f"{k} ({p}) {v:.4f}" for p, ms in r.metrics.items() for k, v in ms.items()
                        if k in ("hr@1", "ndcg@5")))


def load_data(cfg: RRConfig):
    """``cfg.dataset`` preprocessed and split leave-one-out; quick runs keep the first ``max_users`` users."""
    from privrec.experiments.sequential import prepare

    return prepare(cfg.dataset, cfg.preprocessing, "leave_one_out", max_users=cfg.max_users)


def reproduce(cfg: RRConfig, out_dir: str | Path, log: Callable[[str], None] = print, resume: bool = True,
              add_progress: Sequence[str | Path] = (), train_missing: bool = True, keep_capped_states: bool = True,
              command: str | None = None, workers: int = 1, threads: int = 1, ray: RayTarget | None = None) -> dict:
    """Fig. 1 / Fig. 2 analogs and ablations: runs recorded in ``OUT.progress.jsonl``, releases in
    ``OUT.published/``, the report (tables + certificates of every release) in ``out_dir``."""
    from privrec.experiments import rr_report as R

    t0 = time.perf_counter()
    inter, split = load_data(cfg)
    log(f"{cfg.dataset}: {inter.n_users:,} users, {inter.n_items:,} items, {len(inter):,} interactions")
    return runner.reproduce_grid(cfg, lambda c, pub: RRExperiment(c, inter, split, pub), R, out_dir, log=log,
                                 describe=result_line, started=t0, resume=resume, add_progress=add_progress,
                                 train_missing=train_missing, keep_capped_states=keep_capped_states,
                                 command=command, workers=workers, threads=threads, ray=ray)
