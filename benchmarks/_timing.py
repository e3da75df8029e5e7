"""Shared helpers of the benchmark scripts (run as ``python benchmarks/bench_*.py``).

Importing it also puts ``tests/`` on the path, so a benchmark can time the literal reference
implementations (``from reference import jlt``) that live with the tests, not in the package."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """Median wall-clock seconds of ``repeat`` calls, and the last call's result."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out  # type: ignore[return-value]


def step_seconds(batches: Iterable, loss: Callable, optimizer, n: int) -> float:
    """Mean wall-clock seconds of one training step — ``optimizer.zero_grad()``, ``loss(batch).backward()``,
    ``optimizer.step()`` — over ``n`` batches after one warm-up batch (mean, not median: batches of
    different lengths differ in cost by design)."""
    times = []
    for i, batch in enumerate(batches):
        if i > n:
            break
        t0 = time.perf_counter()
        optimizer.zero_grad()
        loss(batch).backward()
        optimizer.step()
        if i:                                   # the first batch warms up
            times.append(time.perf_counter() - t0)
    return statistics.fmean(times)
