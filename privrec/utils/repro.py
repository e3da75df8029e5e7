"""Reproducibility: seeds, generators and the provenance stamped on every result."""

from __future__ import annotations

import functools
import platform
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class SeedInfo:
    """The seed actually used and where it came from ("user" or "os-csprng")."""

    seed: int
    source: str

    def to_dict(self) -> dict:
        return {"seed": self.seed, "source": self.source}


def resolve_seed(seed: int | None) -> SeedInfo:
    """Return the given seed, or draw a fresh 63-bit one from the OS CSPRNG (``secrets``)."""
    if seed is None:
        return SeedInfo(secrets.randbits(63), "os-csprng")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        from privrec.errors import ParameterError

        raise ParameterError(f"seed must be a non-negative integer, got {seed!r}")
    return SeedInfo(int(seed), "user")


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy Generator from a seed, an existing Generator (returned as is) or None (OS entropy)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def seed_torch(seed: int) -> None:
    """Seed torch's global generator (CPU and CUDA) before building and training a model.

    privrec's own random steps all take an explicit ``numpy.random.Generator``; torch's weight
    initialisers and dropout take none, so they draw from the global generator, which the trainer
    saves and restores on resume. Python's ``random`` and NumPy's legacy global RNG are left alone:
    no privrec code reads them."""
    import torch

    torch.manual_seed(seed)


# Settings added after results were recorded, with the default that reproduces the behaviour before them:
# at that default they are left out of every hashed configuration (:func:`without_later_defaults`), so a
# record or state made before the setting existed keeps its fingerprint and stays reusable.
LATER_DEFAULTS: dict[str, object] = {"warmup_steps": 0, "precision": "fp32", "testbed": "dense", "dpsgd_unit": "sample"}
# The same, for settings added at the top level of a configuration only: a key of that name nested deeper is an
# older setting and stays hashed (PriCDR's ``min_rating`` is new; ``preprocessing.min_rating`` is not).
TOP_LEVEL_LATER_DEFAULTS: dict[str, object] = {"min_rating": None, "fields": None}


def _at_default(k, v, defaults: dict) -> bool:
    return k in defaults and v == defaults[k] and type(v) is type(defaults[k])


def without_later_defaults(config, top: bool = True):
    """``config`` (nested dicts/lists) without the keys of :data:`LATER_DEFAULTS` that hold their default (and,
    at its top level, those of :data:`TOP_LEVEL_LATER_DEFAULTS`)."""
    if isinstance(config, dict):
        return {k: without_later_defaults(v, False) for k, v in config.items()
                if not (_at_default(k, v, LATER_DEFAULTS) or (top and _at_default(k, v, TOP_LEVEL_LATER_DEFAULTS)))}
    if isinstance(config, (list, tuple)):
        return type(config)(without_later_defaults(v, False) for v in config)
    return config


def config_hash(config: dict, *arrays: np.ndarray) -> str:
    """16 hex digits of SHA-256 over ``config`` (as sorted JSON, settings of :data:`LATER_DEFAULTS` at
    their default left out) and the bytes of ``arrays``: names what a saved run depends on, so results
    or states are reused only under the same inputs."""
    import hashlib
    import json

    h = hashlib.sha256(json.dumps(without_later_defaults(config), sort_keys=True, default=str).encode())
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The git commit of the privrec source tree, with ``-dirty`` if it has local changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=5
        )
        return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


@functools.lru_cache(maxsize=1)
@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """16 hex digits of SHA-256 over privrec's own Python sources (paths and bytes): two processes on two
    machines run the same privrec exactly when these agree (a cluster's nodes must)."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _lock_file() -> bytes | None:
    """``requirements/lock.txt`` of the source tree as this process first read it (None outside a
    checkout): the digest and the mismatch below describe the same bytes for the whole run."""
    try:
        return (Path(__file__).resolve().parents[2] / "requirements" / "lock.txt").read_bytes()
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def lock_digest() -> str | None:
    """16 hex digits of SHA-256 of ``requirements/lock.txt`` of the source tree (the exact package
    set ``make`` installs), or None outside a checkout. Two results with the same digest ran on the
    same pinned releases (if :func:`lock_mismatch` is empty for both)."""
    import hashlib

    lock = _lock_file()
    return None if lock is None else hashlib.sha256(lock).hexdigest()[:16]


def lock_mismatch() -> list[str] | None:
    """Pins of ``requirements/lock.txt`` that this interpreter does not have installed, as ``"name: lock X,
    installed Y"`` (``[]`` when every pin is installed at its version; None outside a checkout). The lock
    digest says what the checkout asks for; this says whether the running environment is that (a lock
    changed after ``make`` installed, or a venv built some other way, shows here)."""
    found = _mismatch()
    return None if found is None else list(found)


@functools.lru_cache(maxsize=1)
def _mismatch() -> tuple[str, ...] | None:
    lock = _lock_file()
    return None if lock is None else tuple(mismatched_pins(lock.decode()))


def mismatched_pins(lock_text: str) -> list[str]:
    """The ``name==version`` pins of a pip lock file (hash lines and comments skipped) whose installed
    version differs, as ``"name: lock X, installed Y"`` (``installed none`` when absent)."""
    import re
    from importlib import metadata

    out = []
    for name, pinned in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", lock_text, re.M):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "none"
        if have != pinned:
            out.append(f"{name}: lock {pinned}, installed {have}")
    return out


def environment() -> dict:
    """Versions of Python, the platform and the libraries that shape numerical results, the digest of
    the checkout's lock and the pins of it that this environment does not match (:func:`lock_mismatch`)."""
    import privrec

    info = {
        "privrec": privrec.__version__,
        "git_commit": git_commit(),
        "lock_sha256": lock_digest(),
        "lock_mismatch": lock_mismatch(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": np.__version__,
    }
    for mod in ("torch", "pandas", "scipy", "numba", "dp_accounting"):
        try:
            info[mod] = str(__import__(mod).__version__)
        except (ImportError, AttributeError):
            info[mod] = None
    info["accelerator"] = accelerator()
    return info


def accelerator() -> str:
    """The GPU that ``--device auto`` trains on here (its name), or ``"cpu"``."""
    try:
        import torch
        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:  # a broken CUDA setup trains on the CPU
        return "cpu"
