"""A split's randomised-response release, shared by ``reproduce rr`` and ``train --epsilon``.

The alternative map of a dataset's items (built from their text), publishing every user's
test history once (:func:`privrec.release.histories.publish_histories`) and reading a release
back as what the model may read (:class:`~privrec.training.tasks.PrivateInputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from privrec.errors import ParameterError

ALTERNATIVES = ("injective", "nearest", "random")


def item_embeddings(inter) -> np.ndarray:
    """Sentence embeddings of each item's text (title, genres): the semantic space of the alternatives."""
    from privrec.data.text import item_texts
    from privrec.privacy.alternatives import embed_texts

    return embed_texts(item_texts(inter))


def alternative_map(kind: str, n_items: int, embeddings: Callable[[], np.ndarray], seed: int):
    """``injective`` (privrec's matching, Thm 3.1 holds), ``nearest`` (the paper's nearest
    neighbour, not injective) or ``random`` (a random cycle drawn from ``seed``). ``embeddings`` is
    called only when the map needs them."""
    from privrec.privacy import alternatives as A

    if kind not in ALTERNATIVES:
        raise ParameterError(f"unknown alternatives {kind!r}; use one of {ALTERNATIVES}")
    if kind == "random":
        return A.random_map(n_items, np.random.default_rng([seed, 7]))
    return (A.injective_map if kind == "injective" else A.nearest_neighbour_map)(embeddings())


def publish_split(folder: str | Path, inter, split, alt_map, epsilon: float, seed: int, *, alternatives: str,
                  short: str = "refuse", positional: dict | None = None, source: str = ""):
    """Publish every user's history before the test item, perturbed once (the paper's own
    non-injective map is outside Thm 3.1: it publishes as the paper does and is certified with
    its true odds). Returns the guarantee."""
    from privrec.release.histories import publish_histories

    short = "paper" if alternatives == "nearest" else short
    _, g = publish_histories(folder, split.history("test"), inter.users, inter.items, alt_map, epsilon, seed,
                             short=short, positional=positional, record_seed=True, source=source,
                             alternatives=alternatives)
    return g


def read_private(folder: str | Path, inter, split):
    """The verified release ``folder`` cut into training inputs and per-stage histories."""
    from privrec.release.histories import read_histories
    from privrec.training.tasks import private_inputs

    perturbed, published = read_histories(folder, inter.users, inter.items, split.history("test"))
    return private_inputs(split, perturbed, published)
