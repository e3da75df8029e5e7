"""PFCR federated gradient codec (privrec.privacy.fedcodec): seconds to encode and decode one
gradient upload of 10^6 coordinates in paper mode (Eqs. 9-18) and calibrated mode (all
coordinates, or k sampled), the decoded error against the clipped gradient, and the guarantee of
one upload and of 10 rounds. Prints a Markdown table.

    python benchmarks/bench_privacy_fedcodec.py [--coords 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import timed

from privrec.privacy import fedcodec as F


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coords", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    d, T = args.coords, args.rounds
    g = np.random.default_rng(0).normal(0.0, 0.01, d)         # a gradient-like vector
    tau = 0.03
    truth = np.clip(g, -tau, tau)
    rms = float(np.sqrt(np.mean(truth ** 2)))
    rows = []
    configs = [
        ("paper (Eqs. 9-18)", "paper", 0.5, 64, None),
        ("paper (Eqs. 9-18)", "paper", 0.5, 1024, None),
        ("calibrated, all d coords, eps/d each", "calibrated", 0.5, 2, None),
        ("calibrated, k = 1000 sampled, eps/k each", "calibrated", 0.5, 2, 1000),
        ("calibrated, k = 1000 sampled, eps/k each", "calibrated", 0.5, 16, 1000),
    ]
    for label, mode, eps, b, k in configs:
        rng = np.random.default_rng(1)
        if mode == "paper":
            t_enc, rep = timed(lambda: F.encode_paper(g, eps, b, tau, rng), args.repeats)
            t_dec, dec = timed(lambda: F.decode_paper(rep, eps, b, tau), args.repeats)
        else:
            t_enc, rep = timed(lambda: F.encode_calibrated(g, eps, b, tau, rng, k=k), args.repeats)
            t_dec, dec = timed(lambda: F.decode_calibrated(rep), args.repeats)
        t_g = time.perf_counter()
        one = F.guarantee(mode, eps, b, d, 1, k)
        tot = F.guarantee(mode, eps, b, d, T, k)
        t_g = time.perf_counter() - t_g
        err = dec - truth
        z = float(np.mean(err)) / (float(np.std(err, ddof=1)) / np.sqrt(d))   # bias in standard errors
        rows.append((label, eps, b, k or d, t_enc, t_dec, float(np.mean(err)), z,
                     float(np.sqrt(np.mean(err ** 2))) / rms, one, tot, t_g))

    print(f"d = {d:,} coordinates, gradient ~ N(0, 0.01^2), clip tau = {tau}, RMS(clipped) = {rms:.4g}; "
          f"median of {args.repeats} runs; guarantees at delta = 1e-6 where the accountant is tighter\n")
    print("| codec | eps (param) | b | coords sent | encode s | decode s | mean(decoded - truth) | "
          f"z = mean/SE | RMSE / RMS(truth) | true eps, 1 upload | true eps, {T} rounds | guarantee s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, eps, b, k, te, td, bias, z, rel, one, tot, tg in rows:
        def fmt(gu):
            return f"{gu.epsilon:.4g}" + (f" (delta {gu.delta:g})" if gu.delta else "")
        print(f"| {label} | {eps:g} | {b} | {k:,} | {te:.4f} | {td:.4f} | {bias:+.3e} | {z:+.1f} | {rel:.3g} | "
              f"{fmt(one)} | {fmt(tot)} | {tg:.2f} |")


if __name__ == "__main__":
    main()
