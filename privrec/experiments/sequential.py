"""Single-domain sequential recommendation: one config in, a reproducible result out.

``run(cfg)`` loads data, preprocesses, splits, trains one model per seed with validation-
based early stopping, evaluates the restored best model on test once, and aggregates
mean ± std over seeds. Results carry the config, seeds, versions and git commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from privrec.data.interactions import Interactions
from privrec.data.preprocess import TIME_PRECISIONS, Preprocessing, preprocess, time_precision
from privrec.data.sequences import to_sequences
from privrec.data.splits import Split, leave_one_out, temporal_fraction
from privrec.data.tables import load
from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig, evaluate
from privrec.experiments import model_inputs as PI
from privrec.experiments.sequential_report import aggregates
from privrec.inference import ledger_meta
from privrec.models import MODELS, build_on
from privrec.training.checkpoint import save_checkpoint
from privrec.training.tasks import task_for
from privrec.training.trainer import NUMERICS, STOPPING_RULE, TrainConfig, Trainer
from privrec.utils.repro import config_hash, environment, seed_torch
from privrec.utils.resources import check_allocation, check_top_k

SPLITS = ("leave_one_out", "temporal_fraction", "prefixes")   # prefixes: DIPSGNN's (training.tasks.prefixes)

# Evaluation protocols. "recbole" is every choice of RecBole's leaderboard for sequential models on
# ML-1M: rating >= 3, 10-core, leave-one-out by time, max length 50, full ranking over all items
# *without* masking the user's history (RecBole's full-sort evaluation of sequential models does not
# mask it). How training cuts sequences into samples is a training choice, not part of the protocol
# (``stride``; RecBole trains on every prefix, stride 1). RecBole orders by float32 timestamps (64-s steps,
# ties in file order: :func:`~privrec.data.preprocess.time_precision`), which decides 18% of ML-1M's test items.
# grad_clip: the training's gradient norm bound (None: none). RecBole 1.2.1 does not clip (overall.yaml:
# clip_grad_norm: ~); privrec's trainer clips at 5 by default. The committed recbole-protocol SASRec/GRU4Rec runs
# were trained at 5 before the preset followed RecBole; measured norms were 0.01-0.64 while converging, and the
# bound acted only once a run diverged (docs/baselines.md).
# model_config: per model, the settings the preset gives unless --set names them. RecBole's SASRec counts positions
# from each history's oldest item (privrec's default: from the newest; the two agree on full max_len histories,
# which 66% of ML-1M's test users have). The committed recbole-protocol SASRec runs before that entry counted from
# the newest; their configs say so (no "positions" key).
_RECBOLE_MODELS = {"sasrec": {"positions": "oldest"}}
PROTOCOLS: dict[str, dict] = {
    "recbole": {"preprocessing": Preprocessing(min_rating=3, user_k=10, item_k=10), "split": "leave_one_out",
                "max_len": 50, "mask_history": False, "time_precision": "float32", "grad_clip": None,
                "model_config": _RECBOLE_MODELS},
    "recbole-masked": {"preprocessing": Preprocessing(min_rating=3, user_k=10, item_k=10), "split": "leave_one_out",
                       "max_len": 50, "mask_history": True, "time_precision": "float32", "grad_clip": None,
                       "model_config": _RECBOLE_MODELS},
    "raw": {"preprocessing": Preprocessing(), "split": "leave_one_out", "max_len": 50, "mask_history": True,
            "time_precision": "exact", "grad_clip": 5.0},
    # S3Rec's (CIKM 2020) all-items protocol on its own files (already 5-core, items in order): leave-one-out, the
    # last 50 items, full ranking with the history masked, SASRec trained by its own loss (one sampled negative,
    # binary cross-entropy), dropout 0.5, no clipping (RUCAIBox/CIKM2020-S3Rec run_finetune_full.py, trainers.py)
    "s3rec": {"preprocessing": Preprocessing(), "split": "leave_one_out", "max_len": 50, "mask_history": True,
              "time_precision": "exact", "grad_clip": None,
              "model_config": {"sasrec": {"loss": "bce", "dropout": 0.5, "attn_dropout": 0.5}}},
    # Hu & Fang (DIPSGNN) Sec. 5.1: 10-core, each user's last 100 items, first 80% trains / last 20% tests, every
    # prefix a sample, random 10% of the training prefixes validate, per-sample Recall/MRR, no masking. Rating >= 4
    # (not stated in the paper) is what reproduces its ML-1M statistics: 5,949 users (paper 5,945), 2,810 items and
    # 365,535 interactions (both exact); without it 6,040 / 3,260 / 998,539 before the cut
    "dipsgnn": {"preprocessing": Preprocessing(min_rating=4, user_k=10, item_k=10), "split": "prefixes",
                "max_len": 100, "mask_history": False, "time_precision": "exact", "grad_clip": 5.0},
}

DEFAULT_MODEL_CONFIG = {
    "sasrec": {"hidden": 64, "layers": 2, "heads": 2, "inner": 256, "dropout": 0.5, "attn_dropout": 0.5},
    "gru4rec": {"embedding": 64, "hidden": 128, "layers": 1, "dropout": 0.3},
    "bert4rec": {"hidden": 64, "layers": 2, "heads": 2, "inner": 256, "dropout": 0.2, "attn_dropout": 0.2,
                 "mask_prob": 0.2},
    "srgnn": {"hidden": 64, "steps": 1},          # RecBole's SRGNN defaults (DIPSGNN's paper: d = 100)
}
DEFAULT_MODEL_CONFIG["rr-bert4rec"] = {**DEFAULT_MODEL_CONFIG["bert4rec"], "vocab_ratio": 1.5}


@dataclass(frozen=True)
class SequentialConfig:
    dataset: str = "ml-1m"
    fields: dict | None = None          # your file's column for each role ({"user": "customer", ...}); None: recognised
    model: str = "sasrec"
    preprocessing: Preprocessing = field(default_factory=lambda: PROTOCOLS["recbole"]["preprocessing"])
    split: str = "leave_one_out"
    time_precision: str = "exact"       # "float32": RecBole's time order (the recbole protocols)
    max_len: int = 50
    window_mode: str = "all"
    stride: int | None = None           # training windows: None = max_len (non-overlapping), 1 = every prefix
    model_config: dict = field(default_factory=dict)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    seeds: tuple[int, ...] = (0,)
    # Randomised-response release (Mu & Lim): every history perturbed once before training; None = raw data
    epsilon: float | None = None
    alternatives: str = "injective"     # the alternative map (experiments.rr_release.ALTERNATIVES)
    short: str = "refuse"               # users outside Thm 3.1 (keep < 1/2): refuse, or publish as the paper
    release_seed: int = 0               # the one release every training seed reads
    # APGNN / DIPSGNN: user features through epsilon1-LDP first (None: the true features); delta of DIPSGNN's
    # graph guarantee (composed over every noisy aggregation of the run)
    epsilon1: float | None = None
    delta: float = 1e-6
    # DP-SGD (Opacus) instead of Adam: per-sample clipping + noise on Poisson batches, calibrated to this epsilon
    # over the epoch cap (unit: one training sample)
    dpsgd_epsilon: float | None = None
    dpsgd_clip: float = 1.0
    # "sample" (one prefix) or "user" (user-level DP-SGD: a user's gradients summed, then clipped; replace one
    # user) — the unit whose weights compose with DIPSGNN's aggregates into one model certificate
    dpsgd_unit: str = "sample"
    # DIPSGNN: sigma from a target epsilon2 — "paper": Thm 4.2's per-pass formula (sigma 0.228 at eps2 = 5,
    # C = 0.2); "honest": calibrated so the whole run (every noisy pass) meets it. None: --set sigma=...
    epsilon2: float | None = None
    accounting: str = "paper"
    user_features: bool = True          # False: the "-U" ablations (APGNN / DIPSGNN / EdgeRand read zero user rows)
    bucket: bool = True                 # prefixes protocol: training batches of similar prefix length (~2x faster)

    def __post_init__(self) -> None:
        from privrec.experiments.rr_release import ALTERNATIVES
        from privrec.privacy.validate import check_epsilon
        from privrec.release.histories import SHORT_POLICIES

        if self.epsilon is not None:
            check_epsilon(self.epsilon)
        if self.epsilon1 is not None:
            check_epsilon(self.epsilon1)
        if self.epsilon2 is not None:
            check_epsilon(self.epsilon2, "epsilon2")
        if self.accounting not in ("paper", "honest"):
            raise ParameterError(f"accounting must be 'paper' or 'honest', got {self.accounting!r}")
        if self.dpsgd_epsilon is not None:
            from privrec.training.dpsgd import DPSGDConfig

            DPSGDConfig(max_grad_norm=self.dpsgd_clip, epsilon=self.dpsgd_epsilon, delta=self.delta)   # validates
        if self.dpsgd_unit not in ("sample", "user"):
            raise ParameterError(f"dpsgd_unit must be 'sample' or 'user', got {self.dpsgd_unit!r}")
        if self.dpsgd_unit != "sample" and self.dpsgd_epsilon is None:
            raise ParameterError("--dpsgd-unit is DP-SGD's unit of privacy: give its budget with --dpsgd-epsilon E")
        if self.dpsgd_unit == "user" and self.model == "dipsgnn" and self.split != "prefixes":
            raise ParameterError("a DIPSGNN whose model is private (--dpsgd-unit user) plans its noise on the prefixes "
                                 "protocol's validation and test passes: use --protocol dipsgnn")
        from privrec.privacy.validate import check_delta

        check_delta(self.delta)
        if self.alternatives not in ALTERNATIVES:
            raise ParameterError(f"alternatives must be one of {ALTERNATIVES}, got {self.alternatives!r}")
        if self.short not in SHORT_POLICIES:
            raise ParameterError(f"short must be one of {SHORT_POLICIES}, got {self.short!r}")
        if self.time_precision not in TIME_PRECISIONS:
            raise ParameterError(f"time_precision must be one of {TIME_PRECISIONS}, got {self.time_precision!r}")
        if self.split not in SPLITS:
            raise ParameterError(f"split must be one of {SPLITS}, got {self.split!r}")
        if not self.seeds:
            raise ParameterError("give at least one seed")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["model_config"] = self.resolved_model_config()
        d["eval"] = self.eval.to_dict()
        return d

    def resolved_model_config(self) -> dict:
        return {**DEFAULT_MODEL_CONFIG.get(self.model, {}), **self.model_config}


def make_split(seqs, kind: str) -> Split:
    if kind == "prefixes":              # the test part; validation prefixes are drawn by the PrefixTask
        return temporal_fraction(seqs, 0.2, 0.0)
    return leave_one_out(seqs) if kind == "leave_one_out" else temporal_fraction(seqs)


def prepare(dataset: str, preprocessing: Preprocessing, split: str, precision: str = "exact",
            fields: dict | None = None, max_users: int | None = None) -> tuple[Interactions, Split]:
    """``dataset`` (its columns named by ``fields`` where given) filtered by ``preprocessing``, its timestamps at
    ``precision`` (the order of equal-time items), and split; ``max_users``: only the first users (quick runs)."""
    inter = time_precision(preprocess(load(dataset, fields=fields), preprocessing), precision)
    if max_users and max_users < inter.n_users:
        inter = inter.take(inter.user <= max_users).compact()
    return inter, make_split(to_sequences(inter), split)


def data_of(config: dict) -> tuple[Interactions, Split]:
    """The data and split a stored configuration (``results.json``, a progress record, a checkpoint's
    meta) was trained on; configurations written before ``time_precision`` existed used exact times."""
    return prepare(config["dataset"], Preprocessing(**config["preprocessing"]), config["split"],
                   config.get("time_precision", "exact"), config.get("fields"))


def dataset_summary(inter: Interactions) -> dict:
    """What a result records about its data (counts and sparsity; field lists left out)."""
    return {k: v for k, v in inter.summary().items() if k not in ("user_fields", "item_fields")}


def run(cfg: SequentialConfig, out_dir: str | Path | None = None, log: Callable[[str], None] = print,
        data: tuple[Interactions, Split] | None = None, state_dir: str | Path | None = None,
        release_dir: str | Path | None = None, state_file: str | Path | None = None,
        on_run: Callable[[dict], None] | None = None, both_maskings: bool = False) -> dict:
    """Train and test every seed. ``state_dir``: per-seed training state saved every epoch (named
    by a hash of the configuration), so a killed run restarted with the same configuration
    continues where it stopped; the caller deletes it once the results are stored. ``state_file``: that
    state's exact path instead (one seed; the experiment runner names it).

    With ``cfg.epsilon``, every user's history is first published through randomised response into
    ``release_dir`` (default ``out_dir/release``; an existing release there is read, not redone)
    and the models read only that release (labels stay true, as the paper trains).

    With ``both_maskings``, full-ranking runs are also tested under the other history masking
    (``test_other_masking``: the same checkpoint, so the two protocols are compared without
    retraining; ``privrec train`` asks for it, the paper pipelines do not pay for it). ``on_run`` is called
    with each seed's result as soon as that seed is tested (``privrec train`` records it durably)."""
    t0 = time.perf_counter()
    inter, split = data if data is not None else prepare(cfg.dataset, cfg.preprocessing, cfg.split,
                                                         cfg.time_precision, cfg.fields)
    log(f"{cfg.dataset}: {inter.n_users:,} users, {inter.n_items:,} items, {len(inter):,} interactions "
        f"after preprocessing ({time.perf_counter() - t0:.1f}s)")
    check_top_k(cfg.eval.ks, inter.n_items)            # before training, not at the first validation
    longest = int(split.full_history().lengths.max())
    check_allocation(64.0 * cfg.train.batch_size * cfg.max_len * 4, f"--max-len {cfg.max_len} with --batch-size "
                     f"{cfg.train.batch_size}", f"choose a smaller --max-len (the longest history here is {longest:,})")
    private, cert = None, None
    if cfg.epsilon is not None:
        private, cert = _private(cfg, inter, split, release_dir or (out_dir and Path(out_dir) / "release"), log)
    features, feature_cert = PI.user_features(cfg, inter, log)
    extra = {} if features is None else {"n_users": inter.n_users + 1, "n_features": features.shape[1]}
    if features is not None and not cfg.user_features:
        extra["user_ids"] = True                       # the '-U' ablations: user embedding by id
    if getattr(MODELS.get(cfg.model), "needs_users", False):
        extra["n_users"] = inter.n_users + 1
    maskings = 2 if both_maskings and cfg.eval.mode == "full" else 1     # test passes, each re-noised
    task, graphs, graph_cert = None, None, None
    if cfg.split == "prefixes":             # the protocol decides the samples (built once, before the models)
        if getattr(MODELS.get(cfg.model), "task", "") in ("cloze", "merged_cloze"):
            raise ParameterError(f"{cfg.model} trains by cloze (masked items), and the prefixes protocol trains "
                                 "next-item prefixes: use sasrec or gru4rec there, or --split leave_one_out")
        if private is not None:
            raise ParameterError("the prefixes protocol does not read randomised-response releases yet; drop --epsilon")
        task = prefix_task(split, inter.n_items, cfg.max_len, cfg.bucket)
    extra.update(PI.dipsgnn_sigma(cfg, split, log, maskings, task))
    if getattr(MODELS.get(cfg.model), "needs_graphs", False):
        if task is None:
            raise ParameterError(f"{cfg.model} reads published prefix graphs: use --protocol dipsgnn (--split prefixes)")
        graphs, graph_cert = PI.edge_rand_graphs(cfg, task, inter.n_users, log)
    elif cfg.epsilon2 is not None and cfg.model not in ("dipsgnn", "dpmf"):
        raise ParameterError(f"--epsilon2 is the budget of dipsgnn's aggregation noise, edgerand's graphs and dpmf's "
                             f"objective, not {cfg.model}'s")
    run_hash = None if state_dir is None else _run_hash(cfg, split)     # names each seed's resume state
    if run_hash is not None:
        _check_foreign_states(Path(state_dir), run_hash, cfg.seeds)
    runs = []
    make_optimizer, noise, codes_info = None, None, None
    for seed in cfg.seeds:
        seed_torch(seed)
        model = build_on(cfg.model, split.train if private is None else private.train, n_items=inter.n_items,
                         max_len=cfg.max_len, **{**cfg.resolved_model_config(), **extra})
        if features is not None:
            model.set_features(torch.from_numpy(features))
        if graphs is not None:
            model.set_graphs(graphs)
        if getattr(model, "needs_codes", False):        # code-sasrec: items as their text's PQ codes
            codes_info = PI.item_codes(cfg, inter, model, log)
        if hasattr(model, "set_noise"):                 # dpmf: the objective's noise, drawn once per run
            graph_cert = PI.dpmf_noise(cfg, model, task, log)
        if make_optimizer is None or cfg.model == "rr-bert4rec":    # the model decides how it trains (windows)
            if cfg.split != "prefixes":
                task = task_for(model, split, inter.n_items, cfg.max_len, window_mode=cfg.window_mode,
                                stride=cfg.stride, private=private)
            task, make_optimizer, noise = PI.dpsgd_optimizer(cfg, task, log)
        if noise is not None and cfg.dpsgd_unit == "user" and hasattr(model, "charge_training"):
            model.charge_training = False           # DP-SGD's per-user guarantee covers the training passes
        trainer = Trainer(model, task, replace(cfg.train, seed=seed), cfg.eval, log=log,
                          make_optimizer=make_optimizer(seed))
        log(f"[{cfg.model} seed {seed}] training on {task.describe()}")
        if state_file is not None and len(cfg.seeds) != 1:
            raise ParameterError("state_file names the state of one run: give one seed")
        state = state_file or (None if run_hash is None else Path(state_dir) / f"{run_hash}-seed{seed}.pt")
        fit = trainer.fit(None if state is None else Path(state))
        test = trainer.test()
        log(f"[{cfg.model} seed {seed}] best epoch {fit.best_epoch}; test " +
            "  ".join(f"{k} {v:.4f}" for k, v in test.metrics.items() if k.endswith("@10")))
        run_result = {"seed": seed, "fit": fit.to_dict(), "test": test.to_dict()}
        if both_maskings and cfg.eval.mode == "full":
            other = replace(cfg.eval, mask_history=not cfg.eval.mask_history)
            run_result["test_other_masking"] = evaluate(trainer.model, task, "test", other, trainer.device).to_dict()
        weights = None                                  # the DP-SGD weights' guarantee, where trained so
        if noise is not None:
            from privrec.training import dpsgd

            drawn = getattr(trainer.optimizer, "noise_draws", None)       # counted as the noise was drawn
            steps = fit.epochs_run * task.steps_per_epoch if drawn is None else drawn
            weights = dpsgd.guarantee(noise, task.sample_rate, steps, cfg.delta, cfg.dpsgd_clip,
                                      counted=drawn is not None, unit=cfg.dpsgd_unit,
                                      n_units=task.n if cfg.dpsgd_unit == "user" else None)
            run_result["dpsgd_guarantee"] = weights.to_dict()
        if getattr(model, "sigma", None) is not None:
            graph = PI.graph_guarantee(trainer.model, cfg, split, fit.epochs_run, log, maskings, task)
            run_result["graph_guarantee"] = graph.to_dict()
            if weights is not None and weights.relation == "replace_one":    # the model's one certificate
                from privrec.privacy.ledger import compose_model

                run_result["model_guarantee"] = compose_model(graph, weights).to_dict()
        elif graph_cert is not None:
            run_result["dpmf_guarantee" if hasattr(model, "set_noise") else "graph_guarantee"] = graph_cert.to_dict()
        if out_dir is not None:
            ckpt = Path(out_dir) / f"{cfg.model}-seed{seed}.pt"
            # a private model only knows the published histories (the held-out items are never published)
            history = split.full_history() if private is None else private.history["test"]
            save_checkpoint(ckpt, trainer.model, users=inter.users, items=inter.items,
                            history=history, max_len=cfg.max_len,
                            meta={"config": cfg.to_dict(), "seed": seed, "test": test.to_dict(),
                                  "data_digest": split.digest(inter.users, inter.items),
                                  "environment": environment(), **ledger_meta(trainer.model, cfg.delta, weights)})
            run_result["checkpoint"] = ckpt.name
        runs.append(run_result)
        if on_run is not None:
            on_run(run_result)
    result = {
        "kind": "sequential",
        "config": cfg.to_dict(),
        "dataset": dataset_summary(inter),
        "protocol": cfg.eval.label,
        "runs": runs,
        "aggregate": aggregates(runs),
        "seconds": round(time.perf_counter() - t0, 1),
        "environment": environment(),
    }
    if feature_cert is not None:
        result["feature_guarantee"] = feature_cert.to_dict()
    if codes_info is not None:
        result["item_codes"] = codes_info
    if cert is not None:
        result["privacy"] = {"summary": cert["summary"], "guarantee": cert["guarantee"], "input": cert["input"],
                             "published_users": private.n_published}
    return result


def prefix_task(split: Split, n_items: int, max_len: int, bucket: bool = True):
    """DIPSGNN's protocol task over ``split``'s sequences (each cut to its last ``max_len`` items); the
    one constructor for training (:func:`run`) and ``privrec evaluate``."""
    from privrec.training.tasks.prefixes import PrefixTask

    return PrefixTask(split.full_history(), n_items, max_len, seed=0, keep_last=max_len, bucket=bucket)


def _private(cfg: SequentialConfig, inter: Interactions, split: Split, folder: Path | None, log):
    """Publish (unless already there) and read the randomised-response release of ``split``."""
    from privrec.experiments import rr_release as R
    from privrec.release.folder import is_release, read_release

    if folder is None:
        raise ParameterError("training on a randomised-response release needs a folder for it (out_dir or "
                             "release_dir)")
    folder = Path(folder)
    settings = dict(alternatives=cfg.alternatives, short=cfg.short, source=cfg.dataset)
    if is_release(folder):          # reused only if published with these settings (another --epsilon: refused)
        R.check_release(folder, cfg.epsilon, **settings)
    else:
        alt = R.alternative_map(cfg.alternatives, inter.n_items, lambda: R.item_embeddings(inter), cfg.release_seed)
        R.publish_split(folder, inter, split, alt, cfg.epsilon, cfg.release_seed, **settings)
    private = R.read_private(folder, inter, split)
    cert = read_release(folder).certificate
    log(f"trains on the release {folder}: {private.n_published:,} users published; {cert['summary'].splitlines()[0]}")
    return private, cert


def _check_foreign_states(state_dir: Path, run_hash: str, seeds: Sequence[int]) -> None:
    """Refuse to start a seed whose state folder holds that seed's state from other settings: the run would
    train from scratch beside it and delete the folder when done, losing the other run's progress."""
    for seed in seeds:
        other = sorted(f for f in state_dir.glob(f"*-seed{seed}.pt") if f.name != f"{run_hash}-seed{seed}.pt")
        if other:
            raise ParameterError(
                f"{other[0]} is a training state of seed {seed} made with other settings (this run would start over "
                "and delete it when done). Resume it with the settings it was made with (a recbole-protocol state "
                "made before that preset stopped clipping gradients: add --grad-clip 5; a recbole-protocol SASRec state "
                "made before the preset counted positions from the oldest item: add --set positions=newest), or move "
                "it away, or choose another --out")


def _run_hash(cfg: SequentialConfig, split: Split) -> str:
    """Names a run's resume state: the configuration (seeds, the numerics -- progress, device, precision --
    and the stopping rule aside) and the split's contents, so a state is never resumed on other settings or
    edited data. The stopping rule (``--epochs``, ``--patience``) only bounds the loop (:meth:`Trainer.fit`),
    so a killed run resumes under another cap or patience; a run resumed at another precision records how
    many epochs ran at each (``fit.epochs_by_precision``)."""
    d = cfg.to_dict()
    d["train"] = {k: v for k, v in d["train"].items() if k not in (*NUMERICS, *STOPPING_RULE)}
    d.pop("seeds")
    d.pop("time_precision")         # the split's contents (hashed below) already say which order it has
    return config_hash(d, *(a for s in (split.train, split.valid, split.test) for a in (s.indptr, s.items)))
