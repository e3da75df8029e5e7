"""The training steps of ``reproduce pfcr``: one domain alone, prompt tuning, and a federation.

Each returns test metrics under :data:`privrec.flower.bundle.EVAL` (full ranking, history masked,
Recall = HR and NDCG at 10 and 50), with epochs (single-domain, prompt tuning) or rounds (federation)
selected on validation Recall@10 only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from privrec.flower.bundle import EVAL

Log = Callable[[str], None]


def side_state(state: Path, name: str) -> Path:
    """A per-domain training state next to the run's own (``state`` + ``.name``), resumed like it."""
    return state.with_name(f"{state.name}.{name}")


def remembered(state: Path, compute: Callable[[], object], cap: int | None = None):
    """``compute()``, its result kept beside ``state`` (``state`` + ``.done``) until the run clears its side
    states: a run stopped in a later part (another domain, prompt tuning after a federation) resumes
    there instead of training again the parts it had finished. With ``cap`` (a training's epoch cap;
    the result is ``(fit, ...)``), a kept result that ended on a lower cap is computed again: the
    training continues from its kept epoch state."""
    from privrec.utils.io import atomic_path

    done = state.with_name(f"{state.name}.done")
    if done.exists():
        out = torch.load(done, map_location="cpu", weights_only=False)      # our own file, written below
        fit = out[0] if cap is not None else None
        if fit is None or fit["stopped_early"] or fit["epochs_run"] >= cap:
            return out
    out = compute()
    with atomic_path(done) as tmp:
        torch.save(out, tmp)
    return out


def clear_side_states(state: Path) -> None:
    """Remove every part kept beside ``state`` (finished results, epoch states, the federation)."""
    from privrec.experiments.runner import remove_state

    remove_state(state)


def _task(cfg, domain, model):
    """The model's own training task (next-item windows; BERT4Rec: cloze) over the domain's split."""
    from privrec.training.tasks import task_for

    return task_for(model, domain.split, domain.n_items, cfg.max_len)


def _fit(model, cfg, domain, seed: int, state: Path, log: Log, keep_weights: bool = False):
    return remembered(state, lambda: _train(model, cfg, domain, seed, state, log, keep_weights), cap=cfg.train.epochs)


def _train(model, cfg, domain, seed: int, state: Path, log: Log, keep_weights: bool):
    from privrec.training.trainer import Trainer

    trainer = Trainer(model, _task(cfg, domain, model), replace(cfg.train, seed=seed), EVAL, log=log)
    fit = trainer.fit(state)
    test = trainer.test().metrics
    if fit.stopped_early and state.exists():      # a capped training keeps its state: a higher cap continues it
        state.unlink()
    weights = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()} if keep_weights else None
    return fit.to_dict(), dict(test), weights


def single_domain(model_name: str, cfg, domain, codes, seed: int, state: Path, log: Log, keep_weights: bool = False):
    """``model_name`` trained on ``domain`` alone (``codes`` for ``code-sasrec``): (fit, test[, best weights])."""
    from privrec.experiments.sequential import DEFAULT_MODEL_CONFIG
    from privrec.models import build

    torch.manual_seed(seed)
    if model_name == "code-sasrec":
        model = build(model_name, n_items=domain.n_items, max_len=cfg.max_len, **cfg.model)
        model.set_codes(torch.from_numpy(codes))
    else:
        model = build(model_name, n_items=domain.n_items, max_len=cfg.max_len, **DEFAULT_MODEL_CONFIG[model_name])
    log(f"{domain.name}: {model_name}")
    fit, test, weights = _fit(model, cfg, domain, seed, state, lambda m: log(f"{domain.name} {m}"), keep_weights)
    return (fit, test, weights) if keep_weights else (fit, test)


def prompt_tune(cfg, domain, codes, weights: dict, strategy: str, seed: int, state: Path, log: Log):
    """PFCR's prompt tuning (Sec. 3.5, ``strategy`` full or light) from a pre-trained code encoder's
    ``weights``, on ``domain`` alone: (fit, test)."""
    from privrec.models import build

    torch.manual_seed(seed)
    model = build("pfcr-prompt", n_items=domain.n_items, max_len=cfg.max_len, strategy=strategy,
                  context_words=cfg.context_words, **cfg.model)
    model.set_codes(torch.from_numpy(codes))
    model.load_pretrained(weights)
    log(f"{domain.name}: prompt tuning ({strategy})")
    fit, test, _ = _fit(model, cfg, domain, seed, state, lambda m: log(f"{domain.name} {strategy} {m}"))
    return fit, test


def federate(cfg, data, codes: list[np.ndarray], mode: str, strategy: str, seed: int, folder: Path, log: Log, *,
             epsilon: float | None = None, buckets: int | None = None, popular_share: float | None = None) -> dict:
    """Federated pre-training of the code table over ``data``'s domains on Flower (``cfg.runtime``),
    the round with the best validation Recall@10 kept: each client's weights then (its encoder, the
    global table), their test metrics, and each client's guarantee over all rounds run. ``folder`` holds
    the federation while it runs (resumed from there); its result is then kept as ``folder`` + ``.done``."""
    return remembered(folder, lambda: _federate(cfg, data, codes, mode, strategy, seed, folder, log, epsilon=epsilon,
                                                buckets=buckets, popular_share=popular_share))


def _federate(cfg, data, codes: list[np.ndarray], mode: str, strategy: str, seed: int, folder: Path, log: Log, *,
              epsilon: float | None, buckets: int | None, popular_share: float | None) -> dict:
    import time

    from privrec.flower.bundle import FederationConfig, write_bundle
    from privrec.flower.client import client_table, evaluate_round
    from privrec.flower.run import deploy, simulate
    from privrec.training.federated import CodecConfig, upload_guarantee

    t0 = time.perf_counter()
    codec = CodecConfig(mode=mode, epsilon=cfg.epsilon if epsilon is None else epsilon,
                        buckets=cfg.buckets if buckets is None else buckets, clip=cfg.clip)
    fed = FederationConfig(rounds=cfg.rounds, local_epochs=cfg.local_epochs, codec=codec, strategy=strategy,
                           proximal_mu=cfg.proximal_mu if strategy == "fedprox" else 0.0,
                           popular_share=cfg.popular_share if popular_share is None else popular_share, max_len=cfg.max_len,
                           model=cfg.model, train=replace(cfg.train, progress=False), seed=seed)
    bundle = write_bundle(folder, [(d.name, d.split, c) for d, c in zip(data.domains, codes)], fed)
    if cfg.runtime == "simulation":
        result = simulate(bundle.path, log=log)
    else:                               # TLS + SuperNode authentication unless asked for plaintext (loopback only)
        result = deploy(bundle.path, log=log, insecure=cfg.runtime == "deployment-insecure")
    best = int(result["best_round"])
    table = np.load(bundle.global_table(best))
    log(f"federation ({mode}, {strategy}): best round {best} of {cfg.rounds} by validation Recall@10 "
        + ", ".join(f"{r['round']}: {r.get('valid_mean', {}).get('hr@10', float('nan')):.4f}" for r in result["rounds"]))
    weights, test = [], {}
    for k, d in enumerate(data.domains):
        test[d.name] = evaluate_round(bundle, k, best, table, stage="test")[0]
        w = torch.load(bundle.client_state(k, best), map_location="cpu", weights_only=True)["model"]
        w["item_embedding.table.weight"] = torch.as_tensor(client_table(bundle, w["item_embedding.table.weight"].numpy(),
                                                                        table))
        weights.append(w)
    rows = bundle.popular                  # PopCode: only the popular rows' coordinates are ever uploaded
    n_coords = int(table.size if rows is None else rows.sum() * table.shape[1])
    if rows is not None:
        log(f"popcode: {int(rows.sum())} of {rows.size} code rows federated (share {fed.popular_share})")
    guarantees = {d.name: upload_guarantee(codec, n_coords, cfg.rounds).to_dict() for d in data.domains}
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    # seconds of the invocation that finished the federation (rounds run before a resume are not counted)
    return {"federation": {**result, "seconds": round(time.perf_counter() - t0, 2)}, "test": test, "weights": weights,
            "codes": codes, "guarantees": guarantees}
