"""PriCDSR's release: one domain of two-domain data, shared users only, train items only.

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
from privrec.privacy.guarantee import Guarantee
from privrec.release import tables as T
from privrec.release.certificate import certificate
from privrec.release.folder import Release, read_release, write_release
from privrec.release.publish import perturb_sequences
from privrec.utils.repro import resolve_seed


def domain_rows(data: CrossDomainData, domain: str, max_len: int) -> np.ndarray:
    """The rows a mechanism may publish: train split only, last ``max_len`` items, front-padded,
    shape (n_users + 1, max_len) aligned with the shared user codes (row 0 = padding)."""
    return data.publishable_rows(domain).to_padded(max_len).astype(np.int64)


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
    return T.read_sequences(release.data_file((".inter", ".csv", ".parquet")), data.users,
                            data.domain(domain).items, max_len)
