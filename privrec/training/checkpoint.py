"""Checkpoints: everything needed to use a trained model later (weights, config, id maps,
user histories, provenance), stored with ``torch.save`` and read with ``weights_only=True``.

The payload carries a SHA-256 over the weights, id maps and histories; a reader recomputes it
and refuses a file whose content changed after it was written (bit rot, a partial copy, an
edit), since altered weights would otherwise load and silently change every metric.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch

from privrec.data.interactions import IdMap
from privrec.data.sequences import Sequences
from privrec.errors import CheckpointError
from privrec.models import MODELS, Recommender, build
from privrec.utils.io import atomic_path

FORMAT = "privrec-checkpoint/1"


def save_checkpoint(path: str | os.PathLike, model: Recommender, *, users: IdMap, items: IdMap,
                    history: Sequences, max_len: int, meta: dict) -> Path:
    """Write atomically. ``history`` is each user's full known sequence (for recommending)."""
    payload = {
        "format": FORMAT,
        "model": model.name,
        "model_config": model.config(),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "users": [str(t) for t in users.tokens],
        "items": [str(t) for t in items.tokens],
        "history_indptr": torch.from_numpy(np.asarray(history.indptr, dtype=np.int64)),
        "history_items": torch.from_numpy(np.asarray(history.items, dtype=np.int32)),
        "max_len": int(max_len),
        "meta": meta,
    }
    payload["content_sha256"] = content_digest(payload)
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def read_checkpoint(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint; train one with `privrec train`")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for foreign or corrupt files
        raise CheckpointError(f"{path}: not a readable privrec checkpoint ({type(exc).__name__}: {exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a {FORMAT} file; re-train with this version of privrec")
    if "content_sha256" not in payload:
        raise CheckpointError(f"{path}: carries no content hash (written by an older privrec or edited), so its "
                              "weights cannot be checked; train again with this version")
    if payload["content_sha256"] != content_digest(payload):
        raise CheckpointError(f"{path}: its weights or histories differ from what was saved (SHA-256 mismatch): the "
                              "file is corrupted or was edited; restore it from a copy or train again")
    if payload["model"] not in MODELS:
        raise CheckpointError(f"{path}: model {payload['model']!r} is unknown to this privrec version")
    return payload


def content_digest(payload: dict) -> str:
    """SHA-256 over the model name, its weights (sorted by name), the id maps, the histories, its
    constructor arguments, ``max_len`` and the metadata (training config and results)."""
    h = hashlib.sha256(str(payload["model"]).encode())
    for name in sorted(payload["state_dict"]):
        value = payload["state_dict"][name]
        h.update(name.encode() + b"\0")
        if isinstance(value, torch.Tensor):
            h.update(str(value.dtype).encode() + str(tuple(value.shape)).encode())
            h.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            h.update(repr(value).encode())
    for key in ("users", "items"):
        h.update("\0".join(payload[key]).encode() + b"\1")
    for key in ("history_indptr", "history_items"):
        h.update(payload[key].numpy().tobytes())
    for key in ("model_config", "max_len", "meta"):         # how it is rebuilt and what it claims to be
        h.update(json.dumps(payload.get(key), sort_keys=True, default=str).encode() + b"\2")
    return h.hexdigest()


def model_from_checkpoint(payload: dict) -> Recommender:
    model = build(payload["model"], **payload["model_config"])
    model.load_state_dict(payload["state_dict"])
    model.eval()
    return model
