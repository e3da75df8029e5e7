"""A model's learned state, apart from the data the caller handed it.

Some models hold their training inputs as buffers, set by the experiment before training: DMF's
interaction matrix, HeteroCDR's published source rows, DDTCDR's source interactions, EdgeRand's
published graphs, APGNN's user features. They name them in the class attribute ``data_buffers``.
Training states and the in-memory best weights leave those buffers out: they are the caller's
data, set again identically when a run is rebuilt to resume. (A HeteroCDR-raw training state on
ML-1M drama held 248 MB: 2 x 79 MB of data beside 2 x 22 MB of weights and 45 MB of Adam moments;
without the data it is 90 MB.) In their place a state stores :func:`data_digest`, a SHA-256 of the
buffers, so a resume with other data fails instead of silently training on it.
"""

from __future__ import annotations

import hashlib

import torch
from torch import nn

from privrec.errors import CheckpointError

_EXTRA_STATE = "_extra_state"       # torch's state-dict suffix for get_extra_state()


def data_keys(model: nn.Module) -> frozenset[str]:
    """State-dict keys of every submodule's ``data_buffers`` (prefixed as ``state_dict`` names them,
    so a model wrapped by Opacus' ``GradSampleModule`` is covered too)."""
    keys = set()
    for prefix, module in model.named_modules():
        for name in getattr(type(module), "data_buffers", ()):
            keys.add(f"{prefix}.{name}" if prefix else name)
    return frozenset(keys)


def learned_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model.state_dict()`` without the data buffers (tensors share the model's storage: copy to keep)."""
    skip = data_keys(model)
    return {k: v for k, v in model.state_dict().items() if k not in skip}


def stream_keys(model: nn.Module) -> frozenset[str]:
    """State-dict keys of the submodules' extra states (``get_extra_state``: e.g. DIPSGNN's noise generator)."""
    return frozenset(k for k in model.state_dict() if k.endswith(_EXTRA_STATE))


def load_learned_state(model: nn.Module, state: dict[str, torch.Tensor], where: str = "state", *,
                       keep_streams: bool = False) -> None:
    """Load ``state`` into ``model``: every key but the data buffers must be present. Data buffers that
    ``state`` does carry (states written before they were left out) are loaded as before.

    ``keep_streams``: leave the model's extra states (random streams such as DIPSGNN's noise
    generator) where they are. Restoring the best weights at the end of training must not rewind
    the noise: the test passes would otherwise redraw, draw for draw, the noise of the epochs after
    the best one, and the accounting assumes every noisy release has fresh noise."""
    streams = stream_keys(model) if keep_streams else frozenset()
    missing, unexpected = model.load_state_dict({k: v for k, v in state.items() if k not in streams}, strict=False)
    lacking = sorted(set(missing) - data_keys(model) - streams)
    if lacking or unexpected:
        raise CheckpointError(f"{where}: does not fit {type(model).__name__} (missing {lacking[:5]}, "
                              f"unexpected {sorted(unexpected)[:5]}); delete it to train from scratch")


def data_digest(model: nn.Module) -> str | None:
    """SHA-256 over the data buffers' names, dtypes, shapes and bytes; None for a model without any."""
    keys = data_keys(model)
    if not keys:
        return None
    h = hashlib.sha256()
    for name, buf in sorted((k, v) for k, v in model.state_dict().items() if k in keys):
        t = buf.detach().cpu().contiguous().reshape(-1)
        h.update(f"{name}|{t.dtype}|{tuple(buf.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy())
    return h.hexdigest()
