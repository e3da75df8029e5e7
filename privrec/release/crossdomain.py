"""Releases of one domain of two-domain data, shared users only.

PriCDSR's (:func:`publish_domain_rows`): the domain's train rows as sequences.

The auxiliary domain's train rows (never its validation or test items), the last ``max_len``
items of each shared user, front-padded, go through a sequence mechanism; the release folder is
a RecBole dataset (``NAME.inter`` + ``NAME.user`` + ``certificate.json``). The consumer (the
target domain's trainer) reads it back with :func:`read_domain_rows`, which verifies the
certificate and the ids: it cannot tell perturbed from clean rows, and never sees anything else.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privrec.data.crossdomain import CrossDomainData
from privrec.errors import ParameterError, ReleaseError
from privrec.privacy.guarantee import Guarantee
from privrec.release import tables as T
from privrec.release.certificate import certificate
from privrec.release.folder import Release, read_release, write_release
from privrec.release.publish import perturb_sequences, project_ratings
from privrec.release.verify import check_domain_facts
from privrec.utils.repro import resolve_seed


def domain_rows(data: CrossDomainData, domain: str, max_len: int) -> np.ndarray:
    """The rows a mechanism may publish: train split only, last ``max_len`` items, front-padded,
    shape (n_users + 1, max_len) aligned with the shared user codes (row 0 = padding)."""
    return data.publishable_rows(domain).to_padded(max_len).astype(np.int64)


def noise_rows(data: CrossDomainData, domain: str, max_len: int, seed: int) -> np.ndarray:
    """The information control of a sequence release: :func:`domain_rows`' shape and padding, every
    item replaced by one drawn uniformly from the domain's items (``default_rng([seed, 7])``), so a
    model trained on it gets the release's capacity and training steps and none of its content."""
    rows = domain_rows(data, domain, max_len)
    draw = np.random.default_rng([seed, 7]).integers(1, data.domain(domain).n_items + 1, rows.shape)
    return np.where(rows > 0, draw, 0)


def perturb_domain_rows(data: CrossDomainData, domain: str, mechanism: str, epsilon: float, max_len: int,
                        seed: int) -> tuple[np.ndarray, Guarantee]:
    """:func:`domain_rows` through ``mechanism`` with ``default_rng(seed)`` (row 0 stays padding)."""
    rows = domain_rows(data, domain, max_len)
    out = rows.copy()
    out[1:], g = perturb_sequences(rows[1:], data.domain(domain).n_items, mechanism, epsilon,
                                   np.random.default_rng(seed))
    return out, g


def publish_domain_rows(folder: str | Path, data: CrossDomainData, domain: str, mechanism: str, epsilon: float,
                        max_len: int, seed: int | None, *, record_seed: bool = False, fmt: str = "inter",
                        source: str = "") -> tuple[Release, Guarantee]:
    """Perturb and write one domain's rows as a release folder named ``folder`` (data file stem =
    the folder's name, so the folder is a RecBole dataset)."""
    folder = Path(folder)
    info = resolve_seed(seed)
    rows, g = perturb_domain_rows(data, domain, mechanism, epsilon, max_len, info.seed)
    cert = certificate(g, info, kind="sequences", record_seed=record_seed,
                       input_desc={"source": source, "mechanism": mechanism, "domain": domain, "rows": data.n_users,
                                   "max_len": max_len, "interactions": int(np.count_nonzero(rows)),
                                   "split": "train items only (validation and test items withheld)"})
    users = data.users.decode(np.arange(1, data.n_users + 1))
    release = write_release(folder, lambda tmp: T.write_sequences(tmp, folder.name, rows[1:], users,
                                                                  data.domain(domain).items.tokens, fmt), cert)
    return release, g


def read_domain_rows(folder: str | Path, data: CrossDomainData, domain: str, max_len: int) -> np.ndarray:
    """A verified release of ``domain``'s rows, aligned to ``data``'s shared users:
    (n_users + 1, max_len). Refuses uncertified, tampered or mismatching releases."""
    release = read_release(folder)
    got = (release.certificate.get("input") or {}).get("domain")
    if got is not None and got != domain:
        raise ReleaseError(f"{folder}: publishes domain {got!r}, expected {domain!r}")
    check_domain_facts(release.certificate, folder, domain=domain, n_items=data.domain(domain).n_items)
    return T.read_sequences(release.data_file((".inter", ".csv", ".parquet")), data.users,
                            data.domain(domain).items, max_len)


def project_domain_matrix(data: CrossDomainData, domain: str, mechanism: str, epsilon: float, seed: int, *,
                          n_prime: int = 500, q: float = 0.1, calibration: str = "paper", delta: float | None = None,
                          allow_invalid: bool = False, allow_large_delta: bool = False, keep: float = 1.0):
    """What :func:`publish_domain_matrix` publishes, without writing it: (the rating matrix projected, after
    the ``keep`` thinning; the (users, n') release; its guarantee), all drawn from ``seed``."""
    ratings = data.matrix(domain)
    if not 0 < keep <= 1:
        raise ParameterError(f"keep (the source's sampled fraction sd) must be in (0, 1], got {keep}")
    if keep < 1:
        thin = np.random.default_rng([seed, 1]).random(ratings.nnz) < keep
        ratings = ratings.copy()
        ratings.data = ratings.data * thin
        ratings.eliminate_zeros()
    out, g = project_ratings(ratings, mechanism, epsilon, np.random.default_rng(seed), delta=delta,
                             n_prime=n_prime, q=q, calibration=calibration, max_change=1.0,
                             allow_invalid=allow_invalid, allow_large_delta=allow_large_delta)
    return ratings, out, g


def publish_domain_matrix(folder: str | Path, data: CrossDomainData, domain: str, mechanism: str, epsilon: float,
                          seed: int | None, *, n_prime: int = 500, q: float = 0.1, calibration: str = "paper",
                          delta: float | None = None, record_seed: bool = False, source: str = "",
                          allow_invalid: bool = False, allow_large_delta: bool = False,
                          keep: float = 1.0) -> tuple[Release, Guarantee]:
    """Project ``domain``'s 0/1 matrix (:meth:`CrossDomainData.matrix`) with ``mechanism`` (jlt or
    sjlt) and write the release folder ``folder``. ``keep`` < 1 publishes a sparser source: each
    interaction kept independently with that probability first (PriCDR Fig. 5's sparsity degree
    sd; the draw uses the release seed's own stream)."""
    folder = Path(folder)
    info = resolve_seed(seed)
    ratings, out, g = project_domain_matrix(data, domain, mechanism, epsilon, info.seed, n_prime=n_prime, q=q,
                                            calibration=calibration, delta=delta, allow_invalid=allow_invalid,
                                            allow_large_delta=allow_large_delta, keep=keep)
    cert = certificate(g, info, kind="rating-matrix", record_seed=record_seed,
                       input_desc={"source": source, "mechanism": mechanism, "domain": domain, "users": data.n_users,
                                   "items": data.domain(domain).n_items, "interactions": int(ratings.nnz), "kept_fraction": keep,
                                   "n_prime": int(out.shape[1]), "values": "every rating an implicit 1, else 0"})
    users = data.users.decode(np.arange(1, data.n_users + 1))
    release = write_release(folder, lambda tmp: T.write_matrix(tmp, folder.name, out, users, "p", "parquet"), cert)
    return release, g


def read_domain_matrix(folder: str | Path, data: CrossDomainData, domain: str | None = None) -> np.ndarray:
    """A verified rating-matrix release aligned to ``data``'s users: (n_users + 1, n') float64, row 0
    zeros. ``domain``: refuse a release of another domain."""

    release = read_release(folder)
    cert = release.certificate
    if cert.get("kind") != "rating-matrix":
        raise ReleaseError(f"{folder}: a {cert.get('kind')!r} release, not a published rating matrix (privrec publish "
                           "jlt|sjlt)")
    got = (cert.get("input") or {}).get("domain")
    if domain is not None and got is not None and got != domain:
        raise ReleaseError(f"{folder}: publishes domain {got!r}, expected {domain!r}")
    if got is not None:
        if got not in data.names:
            raise ReleaseError(f"{folder}: publishes domain {got!r}, which this data does not have ({list(data.names)})")
        check_domain_facts(cert, folder, domain=got, n_items=data.domain(got).n_items)   # users: read_matrix
    return T.read_matrix(release.data_file((".parquet", ".csv")), data.users, "p")
