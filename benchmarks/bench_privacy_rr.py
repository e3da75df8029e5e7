"""Benchmark: randomised response with semantic alternatives (Mu & Lim, CIKM'25).

(a) All MovieLens-1M titles end to end (the item ids are the titles, e.g. "Toy Story (1995)"):
    load the offline all-MiniLM-L6-v2, embed, exact k-NN (faiss and blocked NumPy), the paper's
    nearest-neighbour map, the injective map and the paired map; map statistics; then the
    guarantees on the real histories (last 200 items per user) at several epsilons.
(b) Exact k-NN alone for 100,000 x 384 random unit vectors, k = 10: faiss vs blocked NumPy.
(c) ``rr.perturb`` / ``rr.perturb_positional`` / ``rr.guarantee`` on a 6,040 x 200 id matrix.

Times are wall-clock seconds (median of ``--repeat`` runs for (c); one run for (a) and (b)).
Run:

    PRIVREC_CACHE=/tmp/pc python benchmarks/bench_privacy_rr.py
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _timing import timed


def table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


def fmt(x, digits: int = 3) -> str:
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}g}"
    return str(x)


def part_a(max_len: int, epsilons: list[float]) -> None:
    from privrec.data.sequences import to_sequences
    from privrec.data.tables import load_dataset
    from privrec.privacy import alternatives as A
    from privrec.privacy import rr

    inter = load_dataset("ml-1m")
    titles = [str(t) for t in inter.items.tokens[1:]]
    rows = []
    t_load, enc = timed(lambda: A.load_encoder())
    rows.append(["load all-MiniLM-L6-v2 (offline)", fmt(t_load), ""])
    t_emb, emb = timed(lambda: A.embed_texts(titles, model=enc, batch_size=128))
    rows.append([f"embed {len(titles)} titles", fmt(t_emb), f"{emb.shape[1]}-d"])
    t_f, (i_f, _) = timed(lambda: A.knn(emb, 10, "faiss"))
    t_n, (i_n, _) = timed(lambda: A.knn(emb, 10, "numpy"))
    rows.append(["k-NN k=10, faiss", fmt(t_f), ""])
    rows.append(["k-NN k=10, blocked NumPy", fmt(t_n), f"identical to faiss: {bool((i_f == i_n).all())}"])
    maps = {}
    for name, fn in (("nearest-neighbour (paper)", lambda: A.nearest_neighbour_map(emb)),
                     ("injective (k=10)", lambda: A.injective_map(emb, k=10)),
                     ("paired (k=10)", lambda: A.paired_map(emb, k=10))):
        t, amap = timed(fn)
        maps[name] = amap
        rows.append([f"map: {name}", fmt(t), ""])
    table("(a) ML-1M titles: embedding, k-NN, maps", ["step", "seconds", "note"], rows)

    srows = []
    for name, amap in maps.items():
        s = amap.statistics()
        srows.append([name, s["injective"], fmt(s["outside_image_fraction"]), s["max_preimage"],
                      fmt(s["two_cycle_fraction"]), fmt(s["mean_distance"]), fmt(s.get("nearest_fraction", 1.0)),
                      fmt(s.get("mean_knn_rank", 1.0)), s["fallback"] or "-"])
    table("(a) map statistics", ["map", "injective", "outside image", "max preimage", "in 2-cycles",
                                  "mean dist", "= nearest", "mean kNN rank", "fallback"], srows)
    examples = []
    for code in (inter.items.encode(["Toy Story (1995)", "Godfather, The (1972)", "Heat (1995)"])):
        examples.append([titles[code - 1]] + [titles[maps[n].alt[code] - 1] for n in maps])
    table("(a) example alternatives", ["item"] + list(maps), examples)

    seqs = to_sequences(inter).to_padded(max_len)[1:]
    n = rr.sequence_lengths(seqs)
    grows = []
    for eps in epsilons:
        k = rr.keep_probabilities(n, eps)
        for name, amap in maps.items():
            g = rr.guarantee(eps, amap, sequences=seqs, allow_invalid=True)
            item = g.related[0].epsilon
            grows.append([fmt(eps), name, fmt(float(k.min())), fmt(float((k < 0.5).mean())), g.valid,
                          fmt(g.epsilon), fmt(item)])
    table(f"(a) guarantees on ML-1M histories (last {max_len} items, {len(seqs)} users, lengths "
          f"{int(n.min())}-{int(n.max())})",
          ["paper eps", "map", "min keep", "users keep<1/2", "Thm 3.1 valid", "true worst posterior odds",
           "per-item LDP eps"], grows)


def part_b(n: int, d: int, k: int) -> None:
    from privrec.privacy import alternatives as A

    x = np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    t_f, (i_f, _) = timed(lambda: A.knn(x, k, "faiss"))
    t_n, (i_n, _) = timed(lambda: A.knn(x, k, "numpy"))
    table(f"(b) exact k-NN, {n:,} x {d} random unit vectors, k={k}", ["backend", "seconds", "note"],
          [["faiss IndexFlatL2 + float64 re-rank", fmt(t_f), ""],
           ["blocked NumPy GEMM + float64 re-rank", fmt(t_n), f"identical to faiss: {bool((i_f == i_n).all())}"]])


def part_c(users: int, length: int, m: int, repeat: int) -> None:
    from privrec.privacy import alternatives as A
    from privrec.privacy import rr

    rng = np.random.default_rng(1)
    lens = rng.integers(20, length + 1, size=users)
    seqs = np.zeros((users, length), dtype=np.int32)
    for u, L in enumerate(lens):
        seqs[u, length - L:] = rng.integers(1, m + 1, size=L)
    amap = A.injective_map(rng.normal(size=(m, 16)), k=10)
    rows = []
    t, _ = timed(lambda: rr.perturb(seqs, amap, 1.0, np.random.default_rng(0)), repeat)
    rows.append(["perturb (Alg. 1)", fmt(t), fmt(seqs.size / t / 1e6)])
    t, _ = timed(lambda: rr.perturb_positional(seqs, amap, 1.0, np.random.default_rng(0), p_outside=0.001,
                                               infeasible="uniform"), repeat)
    rows.append(["perturb_positional (RQ2)", fmt(t), fmt(seqs.size / t / 1e6)])
    t, _ = timed(lambda: rr.guarantee(1.0, amap, sequences=seqs), repeat)
    rows.append(["guarantee(sequences=...)", fmt(t), fmt(seqs.size / t / 1e6)])
    table(f"(c) randomised response on {users:,} x {length} ids (m={m:,})", ["call", "seconds", "M cells / s"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default="abc")
    ap.add_argument("--max-len", type=int, default=200)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[10.0, 1.0, 0.1, 1e-4])
    ap.add_argument("--knn-n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if "a" in args.parts:
        part_a(args.max_len, args.epsilons)
    if "b" in args.parts:
        part_b(args.knn_n, 384, 10)
    if "c" in args.parts:
        part_c(6040, 200, 3706, args.repeat)


if __name__ == "__main__":
    main()
