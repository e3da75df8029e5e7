"""The baselines report: each model on each of S3Rec's files, mean ± std over seeds, beside the row S3Rec
published for it (its repository's all-items table), with the gap in units of one run's sampling error."""

from __future__ import annotations

import math
from pathlib import Path

from privrec.experiments.report import aggregate, markdown_table, pm, save_report, trailer

METRICS = ("hr@5", "ndcg@5", "hr@10", "ndcg@10", "hr@20", "ndcg@20")
SOURCE = "S3Rec (Zhou et al., CIKM 2020), RUCAIBox/CIKM2020-S3Rec @ 2a81540, all_rank.PNG (every item ranked)"
# dataset -> model -> HR@5, NDCG@5, HR@10, NDCG@10, HR@20, NDCG@20 (transcribed from the table image; docs/baselines.md)
PUBLISHED: dict[str, dict[str, tuple[float, ...]]] = {
    "beauty": {"gru4rec": (.0164, .0099, .0283, .0137, .0479, .0187),
               "sasrec": (.0387, .0249, .0605, .0318, .0902, .0394),
               "bert4rec": (.0203, .0124, .0347, .0170, .0599, .0233)},
    "sports": {"gru4rec": (.0129, .0086, .0204, .0110, .0333, .0142),
               "sasrec": (.0233, .0154, .0350, .0192, .0507, .0231),
               "bert4rec": (.0115, .0075, .0191, .0099, .0315, .0130)},
    "toys": {"gru4rec": (.0097, .0059, .0176, .0084, .0301, .0116),
             "sasrec": (.0463, .0306, .0675, .0374, .0941, .0441),
             "bert4rec": (.0116, .0071, .0203, .0099, .0358, .0138)},
    "yelp": {"gru4rec": (.0152, .0099, .0263, .0134, .0439, .0178),
             "sasrec": (.0162, .0100, .0274, .0136, .0457, .0171),
             "bert4rec": (.0051, .0033, .0090, .0045, .0161, .0063)},
}
Z = 1.96


def sampling_error(value: float, users: int) -> float:
    """One run's sampling error of a per-user mean of values in [0, 1] with mean ``value`` over ``users``:
    sqrt(value (1 - value) / users), exact for HR (a Bernoulli mean), an upper bound for NDCG (a [0, 1]
    variable's variance is at most m (1 - m))."""
    return math.sqrt(max(value * (1 - value), 0.0) / max(users, 1))


def compare(mean: float, published: float, users: int) -> dict:
    se = sampling_error(published, users)
    z = (mean - published) / se if se > 0 else 0.0
    verdict = ("at or above" if mean >= published else
               "within sampling error below" if z >= -Z else "below")
    return {"mean": mean, "published": published, "sampling_error": se, "z": z, "verdict": verdict}


def result(cfg, exp, outcome, *, command, seconds, env) -> dict:
    rows = []
    for d in cfg.datasets:
        for m in cfg.models:
            recs = [r for r in outcome.records if r.labels == {"dataset": d, "model": m}]
            if not recs:
                continue
            users = int(recs[0].extra.get("test_users", 0))
            row = {"dataset": d, "model": m, "seeds": [r.seed for r in recs], "test_users": users}
            for proto in ("full", "sampled"):
                row[proto] = aggregate({k: r.metrics[proto][k] for k in METRICS} for r in recs)
            pub = PUBLISHED.get(d, {}).get(m)
            if pub is not None and cfg.max_users is None:
                row["published"] = {k: compare(row["full"][k]["mean"], p, users) for k, p in zip(METRICS, pub)
                                    if k in row["full"]}
            rows.append(row)
    return {"kind": "baselines", "config": cfg.to_dict(), "runs": [r.to_dict() for r in outcome.records],
            "summary": rows, "missing": outcome.missing, "remaining": outcome.remaining, "source": SOURCE,
            "training_seconds": round(sum(r.fit["seconds"] for r in outcome.records), 1), "seconds": round(seconds, 1), "command": command, "environment": env}


def markdown(res: dict) -> str:
    cfg = res["config"]
    lines = ["# Sequential baselines on S3Rec's files, beside its published rows", "",
             f"Protocol `{cfg['protocol']}` (docs/baselines.md): leave-one-out on the files as they are, the last "
             "50 items, one training window per user, epochs selected on validation NDCG@20 (every item ranked, "
             "history masked); SASRec by its own loss (one sampled negative), GRU4Rec and BERT4Rec by privrec's "
             "defaults (S3Rec does not say how it trained them). Test: every item ranked, the user's earlier "
             f"items masked (S3Rec's all-items table); mean ± std over seeds {', '.join(map(str, cfg['seeds']))}."
             + (f" **Quick run on the first {cfg['max_users']} users: not comparable with the published rows.**"
                if cfg.get("max_users") else ""), ""]
    head = ["dataset", "model", "seeds"] + [k.upper() for k in METRICS]
    rows = [[r["dataset"], r["model"], str(len(r["seeds"]))] + [pm(r["full"].get(k)) for k in METRICS]
            for r in res["summary"]]
    lines += ["## Every item ranked (history masked)", "", markdown_table(head, rows), ""]
    pub_rows = []
    for r in res["summary"]:
        for k in ("hr@10", "ndcg@10"):
            c = (r.get("published") or {}).get(k)
            if c:
                pub_rows.append([r["dataset"], r["model"], k.upper(), f"{c['mean']:.4f}", f"{c['published']:.4f}",
                                 f"{c['mean'] - c['published']:+.4f}", f"{c['sampling_error']:.4f}",
                                 f"{c['z']:+.1f}", c["verdict"]])
    if pub_rows:
        lines += ["## Against the published rows", "",
                  f"Published: {SOURCE}. One run's sampling error over a dataset's test users (every user: 22,363 "
                  "Beauty, 35,598 Sports, 19,412 Toys, 30,431 Yelp): sqrt(p (1 − p) / users) at the published value p "
                  "(exact for HR, an upper bound for NDCG); 'within sampling error below' means less than 1.96 of them "
                  "below.", "",
                  markdown_table(["dataset", "model", "metric", "privrec", "published", "difference", "sampling error",
                                  "z", "verdict"], pub_rows), ""]
    rows = [[r["dataset"], r["model"]] + [pm(r["sampled"].get(k)) for k in ("hr@5", "ndcg@5", "hr@10", "ndcg@10")]
            for r in res["summary"]]
    lines += [f"## Against {cfg['negatives']} sampled items (S3Rec's paper protocol, uniform over unseen items)", "",
              markdown_table(["dataset", "model", "HR@5", "NDCG@5", "HR@10", "NDCG@10"], rows), ""]
    if res["missing"]:
        lines += [f"Missing runs ({len(res['missing'])}): " + ", ".join(f"`{k}`" for k in res["missing"][:12])
                  + (" …" if len(res["missing"]) > 12 else ""), ""]
    return "\n".join(lines + trailer(res)) + "\n"


def write(out_dir: str | Path, res: dict) -> None:
    save_report(out_dir, res, markdown(res))
