"""DIPSGNN end to end (Hu & Fang): Table 2 and Figs. 3–7 analogs on ML-1M, with honest accounting.

``ε₁-LDP user features + behaviour graphs → (noisy) gated GNN → per-prefix full ranking``.

* **Protocol** (the paper's Sec. 5.1; ``--protocol dipsgnn`` of ``privrec train``): rating ≥ 4,
  10-core, each user's last 100 items, first 80% trains / last 20% tests, every prefix a sample,
  a *random* 10% of the training prefixes validates, Recall@K / MRR@K over all items, history not
  masked. Epochs selected on validation Recall@20 only (the authors' code picked the best *test*
  value per metric).
* **Methods** (one training run each, :func:`privrec.experiments.sequential.run` with one seed):
  SASRec, GRU4Rec, SR-GNN, APGNN (non-private); DP-SGD (SR-GNN through Opacus at ε₂, unit: one
  training sample), EdgeRand (each user's graph published once at ε₂, :mod:`privrec.models.edgerand`)
  and DIPSGNN (noisy aggregation, σ from ε₂ by Thm 4.2 per pass = ``accounting="paper"``, or
  calibrated so every noisy pass of the run together meets ε₂ = ``"honest"``). EdgeRand and
  DIPSGNN read ε₁-LDP user features (one release per seed, shared by both: paired).
* **Figures**: ε₂ (Fig. 3) and ε₁ (Fig. 4) for EdgeRand and DIPSGNN, propagation steps T (Fig. 5),
  DIPSGNN's clip C (Fig. 6), and the ablation Nonp / Nonp-U / Priv / Priv-U (Fig. 7: DIPSGNN
  without and with privacy, each with and without user features); on ``sweep_seeds``, and each
  figure's shared Table 2 point is read on ``sweep_seeds`` too (one estimator per curve).

The runner (:mod:`privrec.experiments.runner`) resumes, parallelises and records; every run keeps
the guarantees it was trained under (features, graphs or aggregation, DP-SGD), and the report
sets each private point's true ε beside the paper's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig
from privrec.experiments import runner
from privrec.experiments.caps import train_cap
from privrec.experiments.parallel import RayTarget
from privrec.experiments.runner import RunRecord, RunSpec
from privrec.privacy.validate import check_delta, check_epsilon
from privrec.training.trainer import TrainConfig

# method -> (model, how it is private: None, "dpsgd", "graph" (its graph or aggregation), "objective" (DPMF))
METHODS: dict[str, tuple[str, str | None]] = {
    "BPR-MF": ("bprmf", None), "SASRec": ("sasrec", None), "GRU4Rec": ("gru4rec", None),
    "SR-GNN": ("srgnn", None), "APGNN": ("apgnn", None), "DPMF": ("dpmf", "objective"),
    "DP-SGD": ("srgnn", "dpsgd"), "EdgeRand": ("edgerand", "graph"), "DIPSGNN": ("dipsgnn", "graph"),
    # DIPSGNN whose *model* is private (not in the paper; opt in with --methods): half of eps2 for the aggregates
    # (honest sigma), half for user-level DP-SGD on the weights, one certificate per transition count
    "DIPSGNN-DP": ("dipsgnn", "graph+dpsgd"),
}
DEFAULT_METHODS = tuple(m for m in METHODS if m != "DIPSGNN-DP")
# revisions of DIPSGNN-DP's recipe (part of its runs' fingerprint): 2 = delta split in halves too, and the chance of
# a skipped empty user draw in delta
PRIVATE_MODEL_REVISION = 2
FEATURES = ("apgnn", "edgerand", "dipsgnn")           # the models that read user features
EVAL = EvalConfig(mode="full", ks=(5, 10, 20), metrics=("hr", "mrr"), mask_history=False)
PAPER_STATS = {"users": 5945, "items": 2810, "interactions": 365535}
# the paper's Table 2, ML-1M (percent)
PAPER_TABLE = {"BPR-MF": (4.56, 0.81, 2.20, 0.65), "SASRec": (6.69, 1.20, 3.44, 0.98),
               "SR-GNN": (21.01, 5.15, 13.09, 4.61), "APGNN": (21.26, 5.29, 13.23, 4.75),
               "DPMF": (3.15, 0.66, 1.77, 0.57), "DP-SGD": (4.60, 0.82, 2.26, 0.68),
               "EdgeRand": (17.61, 4.28, 10.88, 3.82), "DIPSGNN": (21.13, 6.11, 14.04, 5.63)}
PAPER_GAP = 0.1999                                   # DIPSGNN over EdgeRand, R@20, ML-1M


@dataclass(frozen=True)
class DIPSGNNConfig:
    dataset: str = "ml-1m"
    max_len: int = 100                  # the paper's maximum sequence length (sequences are cut to it first)
    hidden: int = 100                   # d
    user_dim: int = 50                  # d'
    # the paper: Adam, 10 epochs; batch 512 (not stated) keeps an ML-1M epoch near 2.5 min on 2 cores
    train: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=10, batch_size=512, lr=1e-3, patience=3,
                                                                  select_metric="hr@20"))
    epsilon1: float = 20.0
    epsilon2: float = 5.0
    delta: float = 1e-6                 # below 1 / edges (the paper's rule): ML-1M has ~3.6e5 transitions
    clip: float = 0.2                   # C
    steps: int = 1                      # T
    dpsgd_clip: float = 1.0
    bucket: bool = True                 # training batches of similar prefix length: ~2x faster graph batches
    methods: tuple[str, ...] = DEFAULT_METHODS
    honest: bool = True                 # Table 2's DIPSGNN row again under honest accounting
    seeds: tuple[int, ...] = (0, 1, 2)
    sweep_seeds: tuple[int, ...] = (0,)
    epsilon2s: tuple[float, ...] = (3.0, 4.0, 5.0)          # Fig. 3
    epsilon1s: tuple[float, ...] = (10.0, 20.0, 30.0)       # Fig. 4
    steps_grid: tuple[int, ...] = (1, 2, 3, 4, 5)           # Fig. 5
    clips: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)    # Fig. 6
    ablation: bool = True                                   # Fig. 7
    max_users: int | None = None        # quick runs: the first users only

    def __post_init__(self) -> None:
        for e in (self.epsilon1, self.epsilon2, *self.epsilon2s, *self.epsilon1s):
            check_epsilon(e)
        check_delta(self.delta)
        if not self.clip > 0 or any(not c > 0 for c in self.clips):
            raise ParameterError(f"the clip norm C must be positive, got {self.clip} / {list(self.clips)}")
        if self.steps < 1 or any(t < 1 for t in self.steps_grid):
            raise ParameterError(f"propagation steps T must be >= 1, got {self.steps} / {list(self.steps_grid)}")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ParameterError(f"unknown methods {unknown}; use some of {list(METHODS)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ParameterError(f"seeds must be distinct and at least one, got {list(self.seeds)}")

    def to_dict(self) -> dict:
        return asdict(self)


QUICK = dict(max_users=600, hidden=32, user_dim=16, seeds=(0,), epsilon2s=(3.0,), epsilon1s=(), steps_grid=(2,),
             clips=(1.0,), train=TrainConfig(epochs=2, batch_size=256, lr=1e-3, patience=2, select_metric="hr@20",
                                              progress=False))

# Figs. 3-7 by number -> the config grid that makes each; --figures keeps some, empties the others
FIGURES = {"3": "epsilon2s", "4": "epsilon1s", "5": "steps_grid", "6": "clips", "7": "ablation"}


def only_figures(figures: Sequence[str]) -> dict:
    """Config overrides that keep just ``figures``' sweeps (e.g. ``["3", "4"]``: the ε₂ and ε₁ curves, whose
    T = 1 runs cost ~45 CPU-min each on ML-1M, and not Fig. 5, whose T >= 3 runs take 1.5-3 CPU-hours each)."""
    return runner.only_sweeps(figures, FIGURES, off={"ablation": False})


def labels(method: str, cfg: DIPSGNNConfig, **kw) -> dict:
    """A run's identity: the method and every setting its privacy or graph depends on (None where unused)."""
    model, private = METHODS[method]
    lab = {"method": method, "epsilon1": None, "epsilon2": None, "accounting": None, "steps": None, "clip": None,
           "user_features": model in FEATURES}
    if model in ("srgnn", "apgnn", "edgerand", "dipsgnn"):
        lab["steps"] = cfg.steps
    if private in ("graph", "graph+dpsgd"):
        lab.update(epsilon1=cfg.epsilon1, epsilon2=cfg.epsilon2)
    if private in ("dpsgd", "objective"):
        lab["epsilon2"] = cfg.epsilon2
    if model == "dipsgnn":
        lab.update(accounting="honest" if private == "graph+dpsgd" else "paper", clip=cfg.clip)
    lab.update(kw)
    if not lab["user_features"]:
        lab["epsilon1"] = None
    return lab


def run_key(lab: dict, seed: int) -> str:
    return "|".join(str(lab[k]) for k in ("method", "epsilon1", "epsilon2", "accounting", "steps", "clip",
                                          "user_features")) + f"|{seed}"


def grid(cfg: DIPSGNNConfig) -> list[tuple[dict, tuple[int, ...]]]:
    """(labels, seeds) of every cell: Table 2 on ``seeds``, the figures on ``sweep_seeds``."""
    cells = [(labels(m, cfg), cfg.seeds) for m in cfg.methods]
    if cfg.honest and "DIPSGNN" in cfg.methods:
        cells.append((labels("DIPSGNN", cfg, accounting="honest"), cfg.seeds))
    for m in ("EdgeRand", "DIPSGNN"):
        cells += [(labels(m, cfg, epsilon2=e), cfg.sweep_seeds) for e in cfg.epsilon2s]
        cells += [(labels(m, cfg, epsilon1=e), cfg.sweep_seeds) for e in cfg.epsilon1s]
        cells += [(labels(m, cfg, steps=t), cfg.sweep_seeds) for t in cfg.steps_grid]
    cells += [(labels("DIPSGNN", cfg, clip=c), cfg.sweep_seeds) for c in cfg.clips]
    if cfg.ablation:
        cells += [(lab, cfg.sweep_seeds) for _, lab in ablation_cells(cfg)]
    return cells


def ablation_cells(cfg: DIPSGNNConfig) -> list[tuple[str, dict]]:
    """Fig. 7 (Sec. 5.5): Nonp = DIPSGNN with eps1 = eps2 = infinity (true features, no aggregation
    noise; its count adjacency and row clipping kept), Priv = DIPSGNN as in Table 2; '-U' = no user
    features, the user embedding learned per user id."""
    return [(name + ("" if u else "-U"), labels("DIPSGNN", cfg, user_features=u, **kw))
            for name, kw in (("Nonp", {"epsilon1": None, "epsilon2": None, "accounting": "none"}), ("Priv", {}))
            for u in (True, False)]


@dataclass
class DIPSGNNExperiment:
    cfg: DIPSGNNConfig
    inter: object                      # Interactions after preprocessing
    split: object                      # the prefixes split (the PrefixTask cuts and splits it again)

    def runs(self) -> list[RunSpec]:
        out: dict[str, RunSpec] = {}
        for lab, seeds in grid(self.cfg):
            for s in seeds:
                out.setdefault(run_key(lab, s), RunSpec(run_key(lab, s), s, lab))
        return list(out.values())

    def fingerprint(self) -> str:
        return runner.grid_fingerprint(self.cfg, ("seeds", "sweep_seeds", "methods", "honest", "epsilon2s",
                                                  "epsilon1s", "steps_grid", "clips", "ablation", "epsilon1",
                                                  "epsilon2", "clip", "steps"), self.inter.summary())

    def fingerprint_of(self, spec: RunSpec) -> str:
        """The grid's fingerprint; DIPSGNN-DP's runs add its recipe's revision (a new recipe redoes them only)."""
        from privrec.utils.repro import config_hash

        if METHODS[spec.labels["method"]][1] != "graph+dpsgd":
            return self.fingerprint()
        return config_hash({"grid": self.fingerprint(), "private_model": PRIVATE_MODEL_REVISION})

    def cap(self) -> tuple[int, int, int]:
        return train_cap(self.cfg.train)

    @staticmethod
    def work_of(labels: dict) -> float:
        """A run's training cost relative to T = 1 (prices the runs left): each propagation step adds about 0.75
        of a one-step run (EdgeRand measured 1.75× / 2.6× / 3.2× at T = 2 / 3 / 4, docs/dipsgnn.md)."""
        steps = labels.get("steps")
        return 1.0 + 0.75 * (steps - 1) if isinstance(steps, int) and steps > 1 else 1.0

    def prepare(self, spec: RunSpec, log: Callable[[str], None]) -> None:
        """Nothing to publish ahead: each run builds its own releases (LDP features, EdgeRand graphs) from
        its seed, in seconds, so a resumed run needs no files."""

    def sequential_config(self, spec: RunSpec):
        """The one-seed :class:`~privrec.experiments.sequential.SequentialConfig` of a run."""
        from privrec.experiments.sequential import DEFAULT_MODEL_CONFIG, PROTOCOLS, SequentialConfig

        lab, c = spec.labels, self.cfg
        model, private = METHODS[lab["method"]]
        mc = dict(DEFAULT_MODEL_CONFIG.get(model, {}))
        if model in ("srgnn", "apgnn", "edgerand", "dipsgnn"):
            mc.update(hidden=c.hidden, steps=lab["steps"])
        if model in FEATURES:
            mc["user_dim"] = c.user_dim
        if model == "dipsgnn":
            mc["clip"] = lab["clip"]
            if lab["accounting"] == "none":      # Fig. 7's Nonp: eps2 = infinity, no aggregation noise
                mc["sigma"] = 0.0
        preset = PROTOCOLS["dipsgnn"]
        base = SequentialConfig(
            dataset=c.dataset, model=model, preprocessing=preset["preprocessing"], split="prefixes",
            max_len=c.max_len, model_config=mc, train=c.train, eval=EVAL, seeds=(spec.seed,),
            release_seed=spec.seed, epsilon1=lab["epsilon1"], delta=c.delta,
            epsilon2=lab["epsilon2"] if private in ("graph", "objective") else None,
            accounting=lab["accounting"] if lab["accounting"] in ("paper", "honest") else "paper",
            dpsgd_epsilon=lab["epsilon2"] if private == "dpsgd" else None, dpsgd_clip=c.dpsgd_clip,
            user_features=lab["user_features"] or model not in FEATURES, bucket=c.bucket)
        if private != "graph+dpsgd":
            return base
        # DIPSGNN-DP: eps2 and delta split in halves; batches big enough for user-level sampling
        half = lab["epsilon2"] / 2
        return replace(base, epsilon2=half, dpsgd_epsilon=half, dpsgd_unit="user", delta=c.delta / 2,
                       train=replace(c.train, batch_size=self.private_batch()))

    def private_batch(self) -> int:
        """DIPSGNN-DP's batch (expected training prefixes per step): enough for twice the fewest users per step
        that user-level DP-SGD accepts (:data:`privrec.training.dpsgd.MIN_EXPECTED_USERS`), from the users'
        estimated training prefixes (80% of each cut sequence, 90% of those trained), in multiples of 64."""
        from privrec.training.dpsgd import MIN_EXPECTED_USERS

        lengths = np.minimum(self.split.full_history().lengths, self.cfg.max_len)
        prefixes = float(np.maximum(0.8 * lengths - 1, 0).sum() * 0.9)
        need = 2 * MIN_EXPECTED_USERS * prefixes / max(len(lengths), 1)
        return max(self.cfg.train.batch_size, 64 * int(np.ceil(need / 64)))

    def train(self, spec: RunSpec, state: Path, log: Callable[[str], None]) -> RunRecord:
        from privrec.experiments.sequential import run

        tag = f"  [{run_key(spec.labels, spec.seed)}]"
        res = run(self.sequential_config(spec), log=lambda m: log(f"{tag} {m}"), data=(self.inter, self.split),
                  state_file=state)
        r = res["runs"][0]
        extra = {k: r[k] for k in ("graph_guarantee", "dpsgd_guarantee", "dpmf_guarantee", "model_guarantee")
                 if k in r}
        if "feature_guarantee" in res:
            extra["feature_guarantee"] = res["feature_guarantee"]
        return RunRecord(spec.key, spec.seed, dict(spec.labels), r["fit"], {"test": r["test"]["metrics"]},
                         extra=extra)


def result_line(r: RunRecord) -> str:
    return (f"{run_key(r.labels, r.seed)}: " + "  ".join(f"{k} {v:.4f}" for k, v in r.metrics["test"].items()
                                                          if k in ("hr@20", "mrr@20", "hr@10", "mrr@10")))


def statistics(inter, split, max_len: int) -> dict:
    """ML-1M after the protocol (preprocessing, each user's last ``max_len`` items) beside the paper's Table 1."""
    from privrec.experiments.sequential import prefix_task

    seqs = prefix_task(split, inter.n_items, max_len).sequences
    return {"users": int((seqs.lengths > 0).sum()), "items": int(len(np.unique(seqs.items))),
            "interactions": int(len(seqs.items)), "paper": PAPER_STATS}


def load_data(cfg: DIPSGNNConfig):
    """``cfg.dataset`` under the paper's preprocessing, split for prefixes; quick runs keep ``max_users`` users."""
    from privrec.data.sequences import to_sequences
    from privrec.experiments.sequential import PROTOCOLS, make_split, prepare

    inter, split = prepare(cfg.dataset, PROTOCOLS["dipsgnn"]["preprocessing"], "prefixes")
    if cfg.max_users and cfg.max_users < inter.n_users:
        inter = inter.take(inter.user <= cfg.max_users).compact()
        split = make_split(to_sequences(inter), "prefixes")
    return inter, split


def reproduce(cfg: DIPSGNNConfig, out_dir: str | Path, log: Callable[[str], None] = print, resume: bool = True,
              add_progress: Sequence[str | Path] = (), train_missing: bool = True, keep_capped_states: bool = True,
              command: str | None = None, workers: int = 1, threads: int = 1, ray: RayTarget | None = None) -> dict:
    """Table 2 and Figs. 3-7 analogs: runs recorded in ``OUT.progress.jsonl``, the report in ``out_dir``."""
    from privrec.experiments import dipsgnn_report as R

    t0 = time.perf_counter()
    inter, split = load_data(cfg)
    stats = statistics(inter, split, cfg.max_len)
    log(f"{cfg.dataset} after the paper's protocol: {stats['users']:,} users, {stats['items']:,} items, "
        f"{stats['interactions']:,} interactions (paper: 5,945 / 2,810 / 365,535)")
    return runner.reproduce_grid(cfg, lambda c, pub: DIPSGNNExperiment(c, inter, split), R, out_dir, log=log,
                                 describe=result_line, started=t0, resume=resume, add_progress=add_progress,
                                 train_missing=train_missing, keep_capped_states=keep_capped_states,
                                 command=command, workers=workers, threads=threads, ray=ray)
