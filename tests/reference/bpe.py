"""Literal byte-pair-encoding over item sequences: recount every pair after every merge (slow, obvious)."""

from collections import Counter


def learn(rows: list[list[int]], n_items: int, vocab_size: int, min_count: int = 2):
    rows = [list(r) for r in rows]
    merges = []
    while n_items + len(merges) < vocab_size:
        counts = Counter((r[i], r[i + 1]) for r in rows for i in range(len(r) - 1))
        if not counts:
            break
        best = max(counts.values())
        if best < min_count:
            break
        pair = min(p for p, c in counts.items() if c == best)      # ties: the smallest (x, y)
        new = n_items + 1 + len(merges)
        merges.append((pair[0], pair[1], best))
        out = []
        for r in rows:
            merged, i = [], 0
            while i < len(r):
                if i < len(r) - 1 and (r[i], r[i + 1]) == pair:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(r[i])
                    i += 1
            out.append(merged)
        rows = out
    return merges, rows
