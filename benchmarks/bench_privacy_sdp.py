"""SDP mechanism (PriCDSR Eq. 1): privrec's O(n·L) numba path vs the authors' per-position
``np.random.choice`` over m+1 weights (O(n·L·m)), side by side, as ratios.

The literal path is timed on a row sample and scaled linearly to all rows (its cost is
exactly per-row); the sample size is printed. Usage: python benchmarks/bench_privacy_sdp.py
"""

from __future__ import annotations

import numpy as np
from _timing import timed

from privrec.experiments.report import markdown_table
from privrec.privacy import sdp
from reference.sdp import sdp_authors_style


def matrix(n: int, L: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """n rows of L distinct ids in 1..m, a random share of each row front-padded."""
    out = np.zeros((n, L), dtype=np.int64)
    lengths = rng.integers(L // 4, L + 1, n)
    for r in range(n):
        out[r, L - lengths[r]:] = rng.choice(np.arange(1, m + 1), lengths[r], replace=False)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    sdp.perturb(matrix(10, 5, 20, rng), 20, 1.0, rng)                     # numba compile, not timed
    rows = []
    for n, L, m, sample in ((6_040, 200, 3_706, 30), (138_000, 200, 27_000, 5)):
        x = matrix(n, L, m, rng)
        fast, _ = timed(lambda: sdp.perturb(x, m, 1.0, np.random.default_rng(1)), 3)
        t, _ = timed(lambda: sdp_authors_style(x[:sample], m, 1.0, np.random.default_rng(1)))
        literal = t * n / sample
        rows.append((f"{n:,} x {L}", f"{m:,}", f"{fast:.3f}", f"{literal:,.0f} (from {sample} rows)",
                     f"{literal / fast:,.0f}x"))
    print(markdown_table(["matrix", "m", "privrec (s)", "authors' np.random.choice (s, extrapolated)", "ratio"], rows))


if __name__ == "__main__":
    main()
