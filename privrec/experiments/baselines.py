"""Sequential baselines on the papers' own datasets, beside the rows their authors published (issue 77, item 2).

``privrec reproduce baselines``: SASRec, GRU4Rec and BERT4Rec on S3Rec's files (Amazon Beauty, Sports, Toys;
Yelp), each model × dataset × seed one run of the shared runner (progress, resume, ``--jobs``, ``--ray``),
under S3Rec's protocol (:data:`privrec.experiments.sequential.PROTOCOLS` ``"s3rec"``, docs/baselines.md):
leave-one-out on the files as they are, the last 50 items, one training window per user, epochs selected on
validation NDCG@20 with every item ranked and the history masked; tested that way (S3Rec's all-items table)
and against 99 uniformly sampled unseen items (its paper's Table 2 protocol). SASRec trains by its own loss
(one sampled negative, binary cross-entropy) as S3Rec trains it; GRU4Rec and BERT4Rec by privrec's defaults
(S3Rec does not publish how it trained them: labelled in the report).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig
from privrec.experiments import runner
from privrec.experiments.parallel import RayTarget
from privrec.experiments.runner import RunRecord, RunSpec
from privrec.experiments.sequential import DEFAULT_MODEL_CONFIG, PROTOCOLS
from privrec.training.trainer import TrainConfig
from privrec.utils.repro import config_hash, seed_torch

DATASETS = ("beauty", "sports", "toys", "yelp")
MODELS = ("sasrec", "gru4rec", "bert4rec")
LABELS = ("dataset", "model")
FULL = "full"
SAMPLED = "sampled"


@dataclass(frozen=True)
class BaselinesConfig:
    datasets: tuple[str, ...] = DATASETS
    models: tuple[str, ...] = MODELS
    seeds: tuple[int, ...] = (0, 1, 2)
    protocol: str = "s3rec"
    window: str = "last"                         # S3Rec: one training sample per user (items[:-3] -> items[1:-2])
    ks: tuple[int, ...] = (5, 10, 20)
    negatives: int = 99                          # S3Rec's paper: 99 uniformly sampled unseen items
    max_users: int | None = None                 # quick runs: the first users of each file
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        epochs=200, batch_size=256, lr=1e-3, patience=10, select_metric="ndcg@20", grad_clip=None))

    def __post_init__(self) -> None:
        unknown = [d for d in self.datasets if d not in DATASETS] + [m for m in self.models if m not in MODELS]
        if unknown or not self.datasets or not self.models:
            raise ParameterError(f"unknown or empty datasets/models {unknown}; datasets are {', '.join(DATASETS)}, "
                                 f"models {', '.join(MODELS)}")
        if self.protocol not in PROTOCOLS:
            raise ParameterError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def max_len(self) -> int:
        return int(PROTOCOLS[self.protocol]["max_len"])

    def evaluation(self, mode: str, seed: int = 0) -> EvalConfig:
        mask = bool(PROTOCOLS[self.protocol]["mask_history"])
        if mode == FULL:
            return EvalConfig(mode="full", ks=self.ks, mask_history=mask, seed=seed)
        return EvalConfig(mode="sampled", n_negatives=self.negatives, sampler="uniform", ks=self.ks,
                          mask_history=mask, seed=seed)


QUICK = dict(datasets=("beauty",), models=("sasrec", "gru4rec"), seeds=(0,), max_users=2000,
             train=TrainConfig(epochs=3, batch_size=256, lr=1e-3, patience=2, select_metric="ndcg@20", grad_clip=None,
                               progress=False))


def run_key(dataset: str, model: str, seed: int) -> str:
    return f"{model}|{dataset}|{seed}"


def model_config(cfg: BaselinesConfig, model: str) -> dict:
    """The model's settings: privrec's defaults, the protocol's convention for it (SASRec's own loss)."""
    return {**DEFAULT_MODEL_CONFIG[model], **PROTOCOLS[cfg.protocol].get("model_config", {}).get(model, {}),
            "max_len": cfg.max_len}


@dataclass
class BaselinesExperiment:
    cfg: BaselinesConfig
    _data: dict = field(default_factory=dict, init=False, repr=False)     # dataset -> (inter, split)

    def runs(self) -> list[RunSpec]:
        return [RunSpec(run_key(d, m, s), s, {"dataset": d, "model": m})
                for d in self.cfg.datasets for m in self.cfg.models for s in self.cfg.seeds]

    def fingerprint(self) -> str:
        return config_hash(self._common())

    def fingerprint_of(self, spec: RunSpec) -> str:
        """A model's runs depend on its own settings only: a changed BERT4Rec setting redoes BERT4Rec."""
        return config_hash({**self._common(), "model_config": model_config(self.cfg, spec.labels["model"])})

    def _common(self) -> dict:
        d = self.cfg.to_dict()
        for k in ("datasets", "models", "seeds"):
            d.pop(k)
        d["train"] = {k: v for k, v in d["train"].items() if k not in ("progress", "epochs")}
        return d

    def cap(self) -> tuple[int, int, int]:
        return self.cfg.train.epochs, self.cfg.train.patience, self.cfg.train.eval_every

    def prepare(self, spec: RunSpec, log: Callable[[str], None]) -> None:
        pass

    def data(self, dataset: str):
        """``dataset`` split under the protocol (loaded once per experiment)."""
        if dataset not in self._data:
            from privrec.experiments.sequential import prepare

            p = PROTOCOLS[self.cfg.protocol]
            self._data[dataset] = prepare(dataset, p["preprocessing"], p["split"], p["time_precision"],
                                          max_users=self.cfg.max_users)
        return self._data[dataset]

    def train(self, spec: RunSpec, state: Path, log: Callable[[str], None]) -> RunRecord:
        from privrec.evaluation.evaluator import evaluate
        from privrec.models import build_on
        from privrec.training.tasks import task_for
        from privrec.training.trainer import Trainer

        cfg, lab = self.cfg, spec.labels
        inter, split = self.data(lab["dataset"])
        seed_torch(spec.seed)
        model = build_on(lab["model"], split.train, n_items=inter.n_items, **model_config(cfg, lab["model"]))
        task = task_for(model, split, inter.n_items, cfg.max_len, window_mode=cfg.window, trim_padding=True)
        tag = f"  [{lab['model']} {lab['dataset']} seed {spec.seed}]"
        log(f"{tag} {task.describe()}")
        trainer = Trainer(model, task, replace(cfg.train, seed=spec.seed), cfg.evaluation(FULL, spec.seed),
                          log=lambda m: log(f"{tag} {m}"))
        fit = trainer.fit(state)
        metrics = {FULL: trainer.test().metrics,
                   SAMPLED: evaluate(trainer.model, task, "test", cfg.evaluation(SAMPLED, spec.seed),
                                     trainer.device).metrics}
        return RunRecord(spec.key, spec.seed, dict(lab), fit.to_dict(), metrics,
                         extra={"test_users": int((split.test.lengths > 0).sum())})


def result_line(r: RunRecord) -> str:
    full = r.metrics.get(FULL, {})
    return (f"{r.labels['model']:8s} {r.labels['dataset']:7s} seed={r.seed}: "
            + "  ".join(f"{k} {full[k]:.4f}" for k in ("hr@10", "ndcg@10", "ndcg@20") if k in full))


def reproduce(cfg: BaselinesConfig, out_dir: str | Path, log: Callable[[str], None] = print, resume: bool = True,
              add_progress: Sequence[str | Path] = (), train_missing: bool = True, keep_capped_states: bool = True,
              command: str | None = None, workers: int = 1, threads: int = 1, ray: RayTarget | None = None) -> dict:
    """Every (dataset, model, seed) run, and the report beside S3Rec's published rows, in ``out_dir``."""
    from privrec.experiments import baselines_report as R

    t0 = time.perf_counter()
    return runner.reproduce_grid(cfg, lambda c, pub: BaselinesExperiment(c), R, out_dir, log=log,
                                 describe=result_line, started=t0, resume=resume, add_progress=add_progress,
                                 train_missing=train_missing, keep_capped_states=keep_capped_states,
                                 command=command, workers=workers, threads=threads, ray=ray)
