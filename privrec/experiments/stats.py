"""Paired-seed statistics for claim checks: every pipeline compares models seed by seed.

A claim such as "A beats B" is read from the per-seed differences A(seed) − B(seed) over the
seeds both finished: their mean ± std, how many seeds A is ahead in, the mean difference
relative to B's mean, and a two-sided paired t-test (with 3 seeds, 2 degrees of freedom: only
large, consistent differences reach p < 0.05, so read p together with the per-seed signs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from privrec.experiments.report import aggregate


@dataclass(frozen=True)
class Paired:
    seeds: tuple[int, ...]
    ours: tuple[float, ...]
    theirs: tuple[float, ...]
    difference: dict                  # aggregate of the per-seed differences: mean, std, n, values
    relative: float | None            # mean difference / mean of theirs
    ahead: int                        # seeds where ours > theirs
    p_value: float | None             # two-sided paired t-test

    def to_dict(self) -> dict:
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        d.pop("ours")
        d.pop("theirs")
        return d


def paired_p(ours: Sequence[float], theirs: Sequence[float]) -> float | None:
    """Two-sided paired t-test p-value (None below 2 pairs or when every difference is equal)."""
    from scipy import stats

    d = np.subtract(ours, theirs)
    if len(d) < 2 or np.ptp(d) == 0:
        return None
    return float(stats.ttest_rel(ours, theirs).pvalue)


def paired(ours: dict[int, float], theirs: dict[int, float]) -> Paired | None:
    """Compare two {seed: value} maps on the seeds both have (None when they share none)."""
    seeds = tuple(sorted(set(ours) & set(theirs)))
    if not seeds:
        return None
    a = tuple(float(ours[s]) for s in seeds)
    b = tuple(float(theirs[s]) for s in seeds)
    diff = aggregate({"d": x - y} for x, y in zip(a, b))["d"]
    ref = float(np.mean(b))
    return Paired(seeds, a, b, diff, diff["mean"] / ref if ref > 0 else None, int(sum(x > y for x, y in zip(a, b))),
                  paired_p(a, b))


def log_trend(x: Sequence[float], y: Sequence[float]) -> dict | None:
    """Least squares of ``y`` on log10 ``x``: slope per decade, its standard error and two-sided
    p-value (None below 3 points or 2 distinct x)."""
    from scipy import stats

    if len(x) < 3 or len(set(x)) < 2:
        return None
    fit = stats.linregress(np.log10(x), y)
    return {"slope_per_decade": float(fit.slope), "stderr": float(fit.stderr), "p_value": float(fit.pvalue),
            "runs": len(x)}


def signed(stat: dict) -> str:
    """'+0.0123 ± 0.0045' (or just the signed mean for one seed)."""
    return f"{stat['mean']:+.4f}" + (f" ± {stat['std']:.4f}" if stat["n"] > 1 else "")


def paired_cell(c: dict | None) -> str:
    """A paired comparison in one table cell: difference (seeds ahead, p)."""
    if c is None:
        return "–"
    p = "" if c.get("p_value") is None else f", p = {c['p_value']:.2f}"
    return f"{signed(c['difference'])} ({c['ahead']} of {len(c['seeds'])}{p})"
