"""DIPSGNN user-feature LDP (privrec.privacy.features): seconds to encode a raw feature table
and run Algorithm 3 for 10^6 users, on an ML-1M-like schema (age 7, gender 2, occupation 21
categories; d0 = 30) and on a schema of 3 numerical attributes. Prints a Markdown table.

    python benchmarks/bench_privacy_features.py [--users 1000000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from privrec.privacy import features as F


def ml1m_like(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, F.FeatureSchema]:
    frame = pd.DataFrame({
        "age": rng.choice(np.array(F.ML1M_AGE, dtype=np.float64), n),      # RecBole: age:float
        "gender": rng.choice(np.array(F.ML1M_GENDER, dtype=object), n),
        "occupation": rng.integers(0, 21, n).astype(np.float64),
        "zip_code": np.full(n, "00000", dtype=object),
    })
    return frame, F.movielens_schema(frame)


def numeric3(n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, F.FeatureSchema]:
    frame = pd.DataFrame({"n_ratings": rng.integers(0, 5000, n).astype(np.float64),
                          "avg_rating": rng.uniform(1, 5, n),
                          "account_age": rng.uniform(0, 20, n)})
    schema = F.FeatureSchema((F.numerical("n_ratings", 0, 5000), F.numerical("avg_rating", 1, 5),
                              F.numerical("account_age", 0, 20)))
    return frame, schema


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for label, make in (("ML-1M-like (3 categorical, d0=30)", ml1m_like), ("3 numerical (d0=3)", numeric3)):
        frame, schema = make(args.users, rng)
        t0 = time.perf_counter()
        x = F.encode_features(frame, schema)
        t_enc = time.perf_counter() - t0
        for eps1 in (2.0, 20.0):
            t0 = time.perf_counter()
            _, g = F.perturb_features(x, schema, eps1, np.random.default_rng(1))
            t_pert = time.perf_counter() - t0
            rows.append((label, args.users, eps1, g.parameters["k"], t_enc, t_pert, t_enc + t_pert))
    print("| schema | users | eps1 | k | encode (s) | perturb (s) | encode + perturb (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, n, eps1, k, te, tp, tt in rows:
        print(f"| {label} | {n:,} | {eps1:g} | {k} | {te:.2f} | {tp:.2f} | {tt:.2f} |")


if __name__ == "__main__":
    main()
