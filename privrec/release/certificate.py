"""The one certificate layout of every release (``certificate.json`` in the release folder).

Fields: ``kind`` (sequences, rating-matrix, user-features), the :class:`~privrec.privacy.Guarantee`
as data and a one-line ``summary``, ``randomness`` (generator and where the seed came from),
``input`` (what was published: source, domain, split, sizes), ``output`` (the files with their
SHA-256, added by :func:`~privrec.release.folder.write_release`), ``environment`` (versions,
git commit, lock digest) and the ``limitations`` every reader should know.

The seed is left out unless ``record_seed``: with the seed and the release anyone can replay
the noise and undo it. Research reproductions record it (their seeds are in the config
anyway) and say so; a production release should not.
"""

from __future__ import annotations

import datetime as dt

from privrec.privacy.guarantee import Guarantee
from privrec.utils.repro import SeedInfo, environment

KINDS = ("sequences", "rating-matrix", "user-features")

LIMITATIONS = (
    "Randomness comes from NumPy's PCG64 generator: reproducible from its seed but not a cryptographically "
    "secure generator, so anyone who learns the seed can replay and undo the noise; keep seeds private.",
    "Floating-point sampling (Gaussian, uniform) is not hardened against Mironov-style attacks on the "
    "least-significant bits of the output; the stated epsilon assumes ideal real-valued sampling.",
    "Guarantees cover only the unit of privacy stated; correlated records (e.g. all of one user's "
    "interactions) are protected only to the extent the group-level numbers say.",
    "What the release keeps besides the mechanism's output (user ids, row lengths, positions) is not "
    "protected unless the guarantee says so.",
)


def certificate(guarantee: Guarantee, seed: SeedInfo, *, kind: str, input_desc: dict,
                output_desc: dict | None = None, record_seed: bool = False, extra: dict | None = None) -> dict:
    """The certificate of one release (the file list is added when the release is written)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if record_seed:
        note = ("seed recorded on purpose (research reproduction): anyone with this file and the release can "
                "replay the noise; never record the seed of a production release")
    elif seed.source == "user":
        note = "seed given by the user and not recorded here; keep it private (with it the noise can be undone)"
    else:
        note = "seed drawn from the OS CSPRNG for this run and not recorded anywhere"
    return {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "kind": kind,
        "mechanism": guarantee.mechanism,
        "guarantee": guarantee.to_dict(),
        "summary": guarantee.summary(),
        "randomness": {"generator": "numpy.random.PCG64", "seed_source": seed.source,
                       "seed": seed.seed if record_seed else None, "note": note},
        "input": dict(input_desc),
        "output": dict(output_desc or {}),
        "environment": environment(),
        "limitations": list(LIMITATIONS),
        **(extra or {}),
    }
