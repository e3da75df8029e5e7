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

ALPHA = 0.05                              # the level of every claim verdict
TEST = "two-sided paired t-test"          # the test behind every paired p in a report


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
    if len(d) < 2 or no_spread(d):
        return None
    return float(stats.ttest_rel(ours, theirs).pvalue)


def no_spread(values: Sequence[float]) -> bool:
    """Every value equal up to float rounding (then a t statistic is 0/0 or a rounding artefact)."""
    v = np.asarray(values, dtype=float)
    return bool(np.ptp(v) <= 1e-12 * max(1.0, float(np.max(np.abs(v)))))


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
    p = c.get("p_value")
    p = "" if p is None else f", p = {p:.2f}" if p >= 0.01 else f", p = {p:.2g}"     # 0.0021, not 0.00
    return f"{signed(c['difference'])} ({c['ahead']} of {len(c['seeds'])}{p})"


def significant(check: dict) -> bool:
    """The paired difference (``Paired.to_dict()``) is significant at ``ALPHA`` (two seeds at least). Every
    seed's difference equal and non-zero (no spread, so no t statistic: scipy gives no p) counts as significant."""
    if len(check["seeds"]) < 2:
        return False
    if check.get("p_value") is None:
        d = check["difference"]
        return abs(d["mean"]) > 1e-12 and no_spread(d.get("values") or [d["mean"]])
    return check["p_value"] < ALPHA


def verdict(check: dict | None) -> str:
    """"A beats B" from a paired check: holds (ahead, p < ALPHA), fails (significantly behind), not shown, or no
    verdict on fewer than two paired seeds."""
    if check is None or len(check["seeds"]) < 2:
        return "no verdict: one seed"
    if not significant(check):
        return f"not shown (p ≥ {ALPHA:g})"
    return "holds" if check["difference"]["mean"] > 0 else "fails (significantly behind)"


def evidence(check: dict | None, fmt: str = "+.4f", unit: str = "") -> str:
    """A claim's evidence in words: n paired seeds, the mean paired difference ± std (``fmt``, then ``unit``),
    seeds ahead and the paired t-test's p."""
    if check is None:
        return "no paired seeds"
    d, n = check["difference"], len(check["seeds"])
    p = check.get("p_value")
    spread = f" ± {format(d['std'], fmt.lstrip('+'))}" if n > 1 else ""
    return (f"n = {n} paired seed{'s' * (n != 1)}, difference {format(d['mean'], fmt)}{spread}{unit}, ahead in "
            f"{check['ahead']}, " + ("p –" if p is None else f"p = {p:.2g}") + " (paired t)")


def one_sample(values: Sequence[float], reference: float) -> dict | None:
    """Two-sided one-sample t-test of ``values`` (one per seed) against ``reference`` (a paper's number):
    mean, std, n and p (None below two values or without spread)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return None
    p = float(stats.ttest_1samp(v, reference).pvalue) if len(v) >= 2 and not no_spread(v) else None
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0, "n": int(len(v)),
            "reference": reference, "p_value": p}
