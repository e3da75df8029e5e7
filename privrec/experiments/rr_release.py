"""A split's randomised-response release, shared by ``reproduce rr`` and ``train --epsilon``.

The alternative map of a dataset's items (built from their text), publishing every user's
test history once (:func:`privrec.release.histories.publish_histories`) and reading a release
back as what the model may read (:class:`~privrec.training.tasks.PrivateInputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from privrec.errors import DataFormatError, ParameterError

ALTERNATIVES = ("injective", "nearest", "random")


ATTRIBUTE_FIELD = "attributes"          # S3Rec's item attribute ids, space-separated (data.sequence_files)


def semantics(inter) -> str:
    """Where the alternatives' item semantics come from: ``"titles"`` (MiniLM sentence embeddings of title and
    genres) where the items have titles, else ``"attributes"`` (IDF-weighted attribute sets, cosine) where they
    have attribute ids; neither is refused (never ids embedded as if they were text)."""
    from privrec.data.text import TITLE_FIELDS

    feats = inter.item_features
    cols = set() if feats is None else set(feats.columns)
    if cols & set(TITLE_FIELDS):
        return "titles"
    if ATTRIBUTE_FIELD in cols:
        return "attributes"
    raise DataFormatError(f"{inter.name}: the items have neither titles ({', '.join(TITLE_FIELDS)}) nor attribute "
                          "ids, so no semantic alternatives can be built; give an item file with titles or "
                          "precomputed embeddings (--embeddings)")


def item_embeddings(inter) -> np.ndarray:
    """The semantic space of the alternatives (row i: item code i + 1): sentence embeddings of each item's text
    where the items have titles, else their IDF-weighted attribute sets (:func:`semantics` says which)."""
    from privrec.data.text import item_texts
    from privrec.privacy.alternatives import embed_texts

    if semantics(inter) == "titles":
        return embed_texts(item_texts(inter, require_title=True))
    from privrec.privacy.embeddings import attribute_vectors

    column = inter.item_features[ATTRIBUTE_FIELD].reindex(range(1, inter.n_items + 1))
    return attribute_vectors([str(v).split() if isinstance(v, str) else [] for v in column])


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


def check_release(folder: str | Path, epsilon: float, *, alternatives: str, short: str = "refuse",
                  positional: dict | None = None, source: str = "") -> None:
    """Refuse to reuse the release ``folder`` if its certificate was published with other settings
    than the ones asked for now (epsilon, alternatives, short-history policy, RQ2's window, source):
    a folder name does not carry them all, and a reused release would silently stand for another."""
    from privrec.release.folder import read_release

    short = "paper" if alternatives == "nearest" else short
    cert = read_release(folder).certificate
    got_in, got_g = cert.get("input", {}), cert.get("guarantee", {}).get("parameters", {})
    want = {"mechanism": "rr" if positional is None else "rr-positional", "alternatives": alternatives,
            "short_histories": short, "source": source, **(positional or {})}
    diff = [f"{k} = {got_in.get(k)!r} (wanted {v!r})" for k, v in want.items() if got_in.get(k) != v]
    if got_g.get("epsilon") is None or not np.isclose(float(got_g["epsilon"]), epsilon, rtol=1e-12, atol=0):
        diff.append(f"epsilon = {got_g.get('epsilon')!r} (wanted {epsilon!r})")
    if positional is not None and got_g.get("infeasible") != "uniform":
        diff.append(f"infeasible = {got_g.get('infeasible')!r} (wanted 'uniform', which also covers p2 > 1/2)")
    if diff:
        raise ParameterError(f"{folder}: this release was published with other settings: {'; '.join(diff)}. "
                             "Delete the folder to publish it again (and redo the runs trained on it), or "
                             "use another --out")


def read_private(folder: str | Path, inter, split):
    """The verified release ``folder`` cut into training inputs and per-stage histories."""
    from privrec.release.histories import read_histories
    from privrec.training.tasks import private_inputs

    perturbed, published = read_histories(folder, inter.users, inter.items, split.history("test"))
    return private_inputs(split, perturbed, published)
