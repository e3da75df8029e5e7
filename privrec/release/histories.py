"""Randomised-response release of user histories (Mu & Lim, Alg. 1): what each user uploads.

Each user's history before their test item (train + validation items under leave-one-out) is
perturbed **once** on the user side (:func:`perturb_histories`) and published as a release folder
(a RecBole dataset: ``NAME.inter`` with positions as timestamps, ``NAME.user`` listing the
publishing users, ``certificate.json``). Training inputs and validation histories are prefixes of
this one release (:func:`privrec.training.tasks.private_inputs`); nothing is perturbed twice.

Users the bound does not hold for (a keep probability < 1/2: Theorem 3.1's proof needs it, see
:mod:`privrec.privacy.rr`) are handled by ``short``:

* ``"refuse"`` (default): they do not publish; the release and its guarantee cover the others;
* ``"paper"``: they publish as the paper would, and the certificate states the true worst-case
  odds, which then exceed ε.

The certificate says what is *not* protected: history lengths and positions, the training labels
(the true train items) and the held-out items, which the paper's method uses unperturbed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privrec.data.interactions import IdMap
from privrec.data.sequences import Sequences
from privrec.errors import ParameterError
from privrec.privacy import rr
from privrec.privacy.guarantee import Guarantee
from privrec.release import tables as T
from privrec.release.certificate import certificate
from privrec.release.folder import Release, read_release, write_release
from privrec.release.publish import check_guarantee
from privrec.utils.repro import resolve_seed

SHORT_POLICIES = ("refuse", "paper")
UNPROTECTED = ("history lengths and positions; the training labels (each user's true train items, which the "
               "paper's method trains on unperturbed: 'we do not apply randomised response to labels') and the "
               "held-out validation/test items are not published here and are not covered by this guarantee")


def keep_matrix(rows: np.ndarray, epsilon: float, positional: dict | None = None) -> np.ndarray:
    """(users, L) keep probability of every cell (1.0 at padding): uniform (Alg. 1) or RQ2's
    position-weighted variant (``positional``: p_outside, window_fraction, window_position)."""
    if positional is None:
        k = rr.keep_probabilities(rr.sequence_lengths(rows), epsilon)
        return np.where(rows != 0, k[:, None], 1.0)
    return rr.positional_keep_matrix(rows, epsilon, infeasible="uniform", **positional)


def perturb_histories(hist: Sequences, alt_map, epsilon: float, rng: np.random.Generator, *, short: str = "refuse",
                      positional: dict | None = None) -> tuple[Sequences, np.ndarray, Guarantee]:
    """Perturb every user's history once. Returns (perturbed histories — unpublished rows empty —,
    published flag per user row, guarantee over the published users)."""
    if short not in SHORT_POLICIES:
        raise ParameterError(f"short must be one of {SHORT_POLICIES}, got {short!r}")
    width = max(1, int(hist.lengths.max()) if hist.n_rows else 1)
    rows = hist.to_padded(width).astype(np.int64)
    keep = keep_matrix(rows, epsilon, positional)
    published = hist.lengths > 0
    if short == "refuse":
        published &= keep.min(axis=1) >= 0.5
    if not published.any():
        raise ParameterError(f"at epsilon = {epsilon:g} no user's history can be published under Thm 3.1 "
                             "(every keep probability is < 1/2); choose a larger epsilon")
    mine = rows[published]
    allow = short == "paper"
    if positional is None:
        out = rr.perturb(mine, alt_map, epsilon, rng, allow_invalid=allow)
        g = rr.guarantee(epsilon, alt_map, sequences=mine, allow_invalid=allow)
    else:
        out = rr.perturb_positional(mine, alt_map, epsilon, rng, infeasible="uniform", allow_invalid=allow,
                                    **positional)
        g = rr.positional_guarantee(epsilon, alt_map, sequences=mine, infeasible="uniform", allow_invalid=allow,
                                    **positional)
    full = np.zeros_like(rows)
    full[published] = out
    lengths = np.where(published, hist.lengths, 0)
    return _unpad(full, lengths), published, check_guarantee(g, allow)


def _unpad(rows: np.ndarray, lengths: np.ndarray) -> Sequences:
    """Front-padded rows back to CSR (row u = its last ``lengths[u]`` cells)."""
    width = rows.shape[1]
    keep = np.arange(width)[None, :] >= (width - lengths)[:, None]
    return Sequences(np.concatenate([[0], np.cumsum(lengths)]), rows[keep].astype(np.int32))


def publish_histories(folder: str | Path, hist: Sequences, users: IdMap, items: IdMap, alt_map, epsilon: float,
                      seed: int | None, *, short: str = "refuse", positional: dict | None = None,
                      record_seed: bool = False, source: str = "", alternatives: str = "") -> tuple[Release, Guarantee]:
    """Perturb (:func:`perturb_histories`) and write the release folder ``folder``."""
    folder = Path(folder)
    info = resolve_seed(seed)
    out, published, g = perturb_histories(hist, alt_map, epsilon, np.random.default_rng(info.seed), short=short,
                                           positional=positional)
    codes = np.flatnonzero(published)
    width = max(1, int(hist.lengths.max()))      # every user's width, the one read_histories reads back at
    rows = out.to_padded(width, codes)
    n = hist.lengths[1:]
    desc = {"source": source, "mechanism": "rr" if positional is None else "rr-positional",
            "alternatives": alternatives, "perturbed": "each user's history before the test item (train + validation "
            "items), once; training inputs and validation histories are its prefix", "not_protected": UNPROTECTED,
            "users": int((n > 0).sum()), "published_users": int(len(codes)),
            "refused_users": int(((n > 0) & ~published[1:]).sum()),
            "short_histories": short, "interactions": int(out.lengths.sum()), **(positional or {})}
    cert = certificate(g, info, kind="sequences", record_seed=record_seed, input_desc=desc)
    release = write_release(folder, lambda tmp: T.write_sequences(tmp, folder.name, rows, users.decode(codes),
                                                                  items.tokens, "inter"), cert)
    return release, g


def read_histories(folder: str | Path, users: IdMap, items: IdMap, hist: Sequences) -> tuple[Sequences, np.ndarray]:
    """A verified release aligned to ``users``: (perturbed histories, published flag per user row).
    Every published row must have exactly the length of that user's history ``hist``."""
    release = read_release(folder)
    width = max(1, int(hist.lengths.max()))
    rows = T.read_sequences(release.data_file((".inter", ".csv", ".parquet")), users, items, width, require_all=False)
    got = (rows != 0).sum(1)
    published = got > 0
    shifted = np.flatnonzero(published & (rows[:, -1] == 0))
    if len(shifted):
        u = int(shifted[0])
        raise ParameterError(f"{folder}: the published row of user {users.decode([u])[0]} does not end at position "
                             f"{width} (the longest history of this split): not a release of this split")
    bad = published & (got != hist.lengths)
    if bad.any():
        raise ParameterError(f"{folder}: the published history of user {users.decode(np.flatnonzero(bad)[:1])[0]} has "
                             f"{got[bad][0]} items, the data has {hist.lengths[bad][0]}: not a release of this split")
    return _unpad(rows, np.where(published, hist.lengths, 0)), published
