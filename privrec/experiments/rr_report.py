"""Mu & Lim's Fig. 1 / Fig. 2 analogs, ablations, claim verdict and certificates from finished runs.

Metric columns are named ``"hr@1 (sampled)"``: metric and protocol (``record.metrics["sampled"]["hr@1"]``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privrec.experiments.caps import RISING_WINDOW, may_still_improve
from privrec.experiments.provenance import environment_note
from privrec.experiments.report import (
    absent_note,
    aggregate,
    certificates,
    markdown_table,
    partial_note,
    pm,
    release_name,
    save_report,
    trailer,
)
from privrec.experiments.rr import TRAIN_OVERRIDES, WINDOW_USERS
from privrec.experiments.runner import Outcome, RunRecord
from privrec.experiments.stats import ALPHA, TEST, evidence, one_sample, paired
from privrec.experiments.stats import verdict as stat_verdict

PAPER = {"metrics": ("hr@1 (sampled)", "ndcg@5 (sampled)"),
         "drop": {"RR-BERT4Rec": {"hr@1 (sampled)": -0.16, "ndcg@5 (sampled)": -0.12}},
         "baseline_drop": -0.66}
COLS = ("hr@1 (sampled)", "ndcg@5 (sampled)", "hr@10 (sampled)", "ndcg@10 (sampled)", "hr@10 (full)",
        "ndcg@10 (full)")
WINDOW_COLS = tuple(f"{m} (sampled, {WINDOW_USERS})" for m in ("hr@1", "ndcg@5"))   # Fig. 2's subset


def value(r: RunRecord, column: str) -> float:
    return r.column(column)


def _cell(r: RunRecord) -> tuple:
    lab = r.labels
    return lab["method"], lab["epsilon"], lab["alternatives"], lab["position"]


def summarise(runs: list[RunRecord], patience: int, every: int) -> list[dict]:
    """Test metrics per grid cell (method, ε, alternatives, position), mean ± std over seeds."""
    groups: dict[tuple, list[RunRecord]] = {}
    for r in runs:
        groups.setdefault(_cell(r), []).append(r)
    out = []
    for (m, e, a, p), rs in groups.items():
        cols = COLS + (WINDOW_COLS if all(f"sampled, {WINDOW_USERS}" in r.metrics for r in rs) else ())
        out.append({"method": m, "epsilon": e, "alternatives": a, "position": p, "runs": len(rs),
                    "capped": sum(may_still_improve(r.fit, patience, every) for r in rs),
                    "published_users": rs[0].extra.get("published_users"),
                    "window_users": rs[0].extra.get("window_users"),
                    "test": aggregate({c: value(r, c) for c in cols} for r in rs)})
    return out


def drops(runs: list[RunRecord], epsilons: list[float], alternatives: str) -> list[dict]:
    """Relative change from the largest to the smallest ε per method and paper metric, paired by seed,
    next to the paper's (RR-BERT4Rec −16% HR@1 / −12% NDCG@5; baselines at least −66%)."""
    if len(epsilons) < 2:
        return []
    hi, lo = max(epsilons), min(epsilons)
    by = {(*_cell(r), r.seed): r for r in runs}
    out = []
    for method in dict.fromkeys(r.labels["method"] for r in runs):
        for col in PAPER["metrics"]:
            rel = {}
            for (m, e, a, p, s), r in by.items():
                if (m, e, a, p) == (method, lo, alternatives, None) and (method, hi, alternatives, None, s) in by:
                    top = value(by[(method, hi, alternatives, None, s)], col)
                    rel[s] = value(r, col) / top - 1 if top > 0 else float("nan")
            if rel:
                paper = PAPER["drop"].get(method, {}).get(col)
                out.append({"method": method, "metric": col, "from": hi, "to": lo, "seeds": sorted(rel),
                            "relative": aggregate({"d": v} for v in rel.values())["d"],
                            "paper": paper if paper is not None else f"<= {PAPER['baseline_drop']:+.0%}"})
    return out


def verdict(drop_rows: list[dict], runs: list[RunRecord] = (), alternatives: str = "injective") -> list[str]:
    """The paper's claim, in its three parts, each with n, the paired difference, p and a verdict: (i)
    RR-BERT4Rec loses less than GRU4Rec and BERT4Rec as ε shrinks (paired t over seeds); (ii) "far less": the
    baselines lose at least 66% (Fig. 1; one-sample t against −66%) while it loses 16% / 12%; (iii) what the
    smaller loss is worth: its score at the smallest ε against each baseline's (paired t)."""
    lines = []
    for col in PAPER["metrics"]:
        rows = {d["method"]: d for d in drop_rows if d["metric"] == col}
        ours = rows.get("RR-BERT4Rec")
        for base in ("GRU4Rec", "BERT4Rec"):
            if ours is None or base not in rows:
                continue
            check = paired(dict(zip(ours["seeds"], ours["relative"]["values"])),
                           dict(zip(rows[base]["seeds"], rows[base]["relative"]["values"])))
            check = check.to_dict() if check else None
            lines.append(f"- {col}: RR-BERT4Rec loses less than {base} ({ours['relative']['mean']:+.1%} vs "
                         f"{rows[base]['relative']['mean']:+.1%}): **{stat_verdict(check)}** — "
                         f"{evidence(check, '+.1%')}. Paper: {ours['paper']:+.0%} vs {base} "
                         f"{PAPER['baseline_drop']:+.0%} or worse.")
    for d in (d for d in drop_rows if d["method"] in ("GRU4Rec", "BERT4Rec")):
        t = one_sample(d["relative"]["values"], PAPER["baseline_drop"])
        lines.append(f"- {d['method']} collapses on {d['metric']} (paper: {PAPER['baseline_drop']:+.0%} or worse): "
                     f"**{collapse_verdict(t)}** — {_one_sample_text(t)}.")
    lines += absolute_at_smallest(runs, drop_rows, alternatives)
    return lines


def collapse_verdict(t: dict | None) -> str:
    """A loss "at least as large as the paper's": holds where the mean loss reaches it, fails where the mean is
    significantly short of it (one-sample t, p < ALPHA), else not shown."""
    if t is None or t["n"] < 2:
        return "no verdict: one seed"
    if t["mean"] <= t["reference"]:
        return "holds"
    return "fails" if t["p_value"] is None or t["p_value"] < ALPHA else f"not shown (p ≥ {ALPHA:g})"


def _one_sample_text(t: dict | None) -> str:
    if t is None:
        return "no seeds"
    spread = f" ± {t['std']:.1%}" if t["n"] > 1 else ""
    p = "p –" if t["p_value"] is None else f"p = {t['p_value']:.2g}"
    return f"n = {t['n']} seeds, mean change {t['mean']:+.1%}{spread} against {t['reference']:+.0%}, {p} (one-sample t)"


def absolute_at_smallest(runs: list[RunRecord], drop_rows: list[dict], alternatives: str) -> list[str]:
    """RR-BERT4Rec against each baseline at the smallest ε of the drops, paired by seed: a smaller loss
    only helps a user if the score it leaves is higher."""
    if not drop_rows or not runs:
        return []
    lo = drop_rows[0]["to"]
    at = {(r.labels["method"], r.seed): r for r in runs if _cell(r)[1:] == (lo, alternatives, None)}
    lines = []
    for col in PAPER["metrics"]:
        ours = {s: value(r, col) for (m, s), r in at.items() if m == "RR-BERT4Rec"}
        for base in ("GRU4Rec", "BERT4Rec"):
            theirs = {s: value(r, col) for (m, s), r in at.items() if m == base}
            check = paired(ours, theirs)
            if check is None:
                continue
            check = check.to_dict()
            lines.append(f"- {col} at ε = {lo:g}: RR-BERT4Rec ({np.mean(check_values(ours, check)):.4f}) beats {base} "
                         f"({np.mean(check_values(theirs, check)):.4f}): **{stat_verdict(check)}** — "
                         f"{evidence(check)}.")
    return lines


def check_values(values: dict[int, float], check: dict) -> list[float]:
    return [values[s] for s in check["seeds"]]


def validity(hist_lengths: np.ndarray, epsilons: list[float]) -> list[dict]:
    """Per ε: the keep probability at the median history length and the share of users outside
    Thm 3.1 (keep < 1/2), who do not publish by default."""
    from privrec.privacy.rr import keep_probabilities

    n = hist_lengths[hist_lengths > 0]
    out = []
    for e in sorted(set(epsilons), reverse=True):
        k = keep_probabilities(n, e)
        with np.errstate(divide="ignore"):
            ldp = np.abs(np.log(k) - np.log1p(-k))          # ln(k / (1 - k)): ∞ where k = 1
        out.append({"epsilon": e, "median_length": float(np.median(n)),
                    "keep_at_median": float(keep_probabilities(np.array([int(np.median(n))]), e)[0]),
                    "outside_validity": float((k < 0.5).mean()), "users": int(len(n)),
                    "items_kept": float((n * k).sum() / n.sum()),
                    "item_ldp": [float(ldp.min()), float(ldp.max())]})
    return out


def _item_ldp(v: dict) -> str:
    lo, hi = v["item_ldp"]
    return "–" if lo is None else f"{lo:.3g}–{hi:.3g}"


def result(cfg, exp, outcome: Outcome, *, command: str | None, seconds: float, env: dict) -> dict:
    runs = outcome.records
    c = cfg.to_dict()
    stats = {k: v for k, v in exp.inter.summary().items() if k not in ("user_fields", "item_fields")}
    c["train_overrides"] = {m: o for m, o in TRAIN_OVERRIDES.items() if m in (*cfg.methods, *cfg.ablation_methods)}
    return {"kind": "rr", "config": c, "statistics": stats, "runs": [r.to_dict() for r in runs],
            "summary": summarise(runs, cfg.train.patience, cfg.train.eval_every),
            "drops": drops(runs, list(cfg.epsilons), cfg.alternatives),
            "validity": validity(exp.split.history("test").lengths, [*cfg.epsilons, cfg.ablation_epsilon,
                                                                        cfg.positional_epsilon]),
            "certificates": certificates(exp.published, runs), "published": f"{exp.published.name}/",
            "semantics": _semantics(exp.inter),
            "missing": outcome.missing, "remaining": outcome.remaining, "environment_note": environment_note(outcome),
            "training_seconds": round(sum(r.fit["seconds"] for r in runs), 1), "seconds": round(seconds, 1),
            "command": command, "environment": env}


def _semantics(inter) -> str:
    """Where the alternatives' item semantics came from, in words (``rr_release.semantics``)."""
    from privrec.errors import DataFormatError
    from privrec.experiments.rr_release import semantics

    try:
        kind = semantics(inter)
    except DataFormatError:
        return "none (no titles or attributes)"
    return ("MiniLM sentence embeddings of each item's title and genres" if kind == "titles" else
            "each item's attribute ids (IDF-weighted, cosine): the dataset has no item text")


def _budget_note(train: dict) -> str:
    """How long each run trained: a fixed budget, or a cap with early stopping."""
    if train["patience"] is None:
        return (f", a fixed budget of {train['epochs']} epochs (no early stopping; the epoch with the best "
                "validation is tested).")
    return f", at most {train['epochs']} epochs, patience {train['patience']}."


def _warmup_note(cfg: dict) -> str:
    """', lr warmed up linearly over its first N steps for A, B' for the methods that have a warmup."""
    by_steps: dict[int, list[str]] = {}
    for m, o in cfg.get("train_overrides", {}).items():
        if o.get("warmup_steps"):
            by_steps.setdefault(o["warmup_steps"], []).append(m)
    return "".join(f", lr warmed up linearly over the first {n} steps for {', '.join(ms)}" for n, ms in by_steps.items())


def write(out_dir: str | Path, res: dict) -> None:
    from privrec.experiments.rr_plot import plots

    save_report(out_dir, res, markdown(res), plots=plots(res))


def _find(summary: list[dict], method: str, eps, alt, pos=None) -> dict | None:
    return next((s for s in summary if (s["method"], s["epsilon"], s["alternatives"], s["position"]) ==
                 (method, eps, alt, pos)), None)


def _cells(s: dict | None, cols=PAPER["metrics"]) -> list[str]:
    return ["–"] * len(cols) if s is None else [pm(s["test"].get(c)) + ("†" if s["capped"] else "") for c in cols]


def _window_share(summary: list[dict]) -> str:
    s = next((s for s in summary if s["position"] is not None and s.get("window_users") is not None), None)
    if s is None:
        return "counted once a Fig. 2 run finishes"
    return f"{s['window_users']:,} users; the others published with the uniform keep or were refused"


def _percent(stat: dict) -> str:
    return f"{stat['mean']:+.1%}" + (f" ± {stat['std']:.1%}" if stat["n"] > 1 else "")


def markdown(res: dict) -> str:
    cfg, summary = res["config"], res["summary"]
    eps, alt = cfg["epsilons"], cfg["alternatives"]
    st = res["statistics"]
    lines = [f"# Randomised-response sequential recommendation on {cfg['dataset']} (Mu & Lim, CIKM'25)", "",
             f"{st['users']:,} users, {st['items']:,} items, {st['interactions']:,} interactions "
             f"({'every rating' if str(cfg['dataset']).startswith('ml-') else 'the file as released'}; "
             f"leave-one-out). Test metrics, mean ± std over seeds {list(cfg['seeds'])}; epochs selected on validation "
             f"sampled NDCG@5. 'sampled': the test item against 100 popularity-sampled negatives (the paper's and "
             f"BERT4Rec's protocol); 'full': against all items, history masked. Models read L = {cfg['max_len']} "
             f"positions (tokens for RR-BERT4Rec, vocabulary {cfg['vocab_ratio']}× the items). Alternatives: "
             f"{alt}" + (f", item semantics from {res['semantics']}" if res.get("semantics") else "")
             + f". Adam lr {cfg['train']['lr']:g}"
             + "".join(f", {m} lr {o['lr']:g}" for m, o in cfg.get("train_overrides", {}).items()
                       if "lr" in o and o["lr"] != cfg["train"]["lr"])
             + _warmup_note(cfg)
             + _budget_note(cfg["train"])
             + (f" Quick run on {cfg['max_users']} users." if cfg["max_users"] else ""), "",
             "What is perturbed: each user's history before the test item, once, on the user side; training inputs "
             "and validation histories are its prefix. Not perturbed (as in the paper): training labels and "
             "held-out items. Users outside Thm 3.1 (keep < 1/2) do not publish "
             f"(policy '{cfg['short']}'): they add no training data and are evaluated from an empty history.", ""]
    lines += partial_note(len(res["runs"]), res)
    lines += res.get("environment_note", [])
    header = ["method", "non-private"] + [f"ε = {e:g}" for e in eps]
    for col in PAPER["metrics"]:
        rows = [[m, *_cells(_find(summary, m, None, None), (col,))] +
                [_cells(_find(summary, m, e, alt), (col,))[0] for e in eps] for m in cfg["methods"]]
        lines += [f"## Fig. 1 analog: {col}", "", markdown_table(header, rows), ""]
    lines += ["## Relative change from the largest to the smallest ε (paired by seed)", "",
              markdown_table(["method", "metric", "ε", "relative change", "paper"],
                             [[d["method"], d["metric"], f"{d['from']:g} → {d['to']:g}", _percent(d["relative"]),
                               d["paper"] if isinstance(d["paper"], str) else f"{d['paper']:+.0%}"]
                              for d in res["drops"]]), "", f"**Claim verdict** (paired by seed; {TEST} unless marked, at p < {ALPHA:g})", ""]
    lines += verdict(res["drops"], [RunRecord.from_dict(r) for r in res["runs"]],
                     cfg["alternatives"]) or ["- not enough finished runs for a verdict"]
    from privrec.experiments.rr_plot import plots

    drawn = plots(res)
    lines += [f"\n![{name}]({name})" for name in drawn]
    lines += ["", "## Keep probability, what is published unchanged, and Thm 3.1 validity per ε", "",
              markdown_table(["ε", "keep at median length", "median length", "users outside validity (keep < 1/2)",
                              "history items published unchanged (expected)", "per-item ε-LDP (range over users)"],
                             [[f"{v['epsilon']:g}", f"{v['keep_at_median']:.4f}", f"{v['median_length']:.0f}",
                               f"{v['outside_validity']:.2%} of {v['users']:,}",
                               f"{v['items_kept']:.1%}" if "items_kept" in v else "–",
                               _item_ldp(v) if "item_ldp" in v else "–"] for v in res["validity"]]), "",
              "ε is the paper's posterior-odds bound on recovering a user's *whole* history, not a DP ε. What it means "
              "per item: each history item is published unchanged with its user's keep probability k = (ε/(1+ε))^(1/n) "
              "(the expected share over all history items above), and swapping one item v for its alternative a(v) is "
              "ln(k/(1−k))-LDP only for items in a 2-cycle of the map (a(a(v)) = v); for the others the pair is "
              "distinguishable outright (∞; each release's certificate gives its map's 2-cycle share). Uniform "
              "releases; the RQ2 window variant keeps less inside the window and more outside.", "",
              "**Model private: no.** The released histories carry the guarantee above; the models are trained on "
              "them *and* on each user's true training items as labels (the paper: 'we do not apply randomised "
              "response to labels'), so neither the weights nor their recommendations are covered by any ε here.",
              ""]
    ae = cfg["ablation_epsilon"]
    abl = [("RR-BERT4Rec", "merging on, bidirectional on (the paper)"), ("BERT4Rec", "merging off"),
           ("RR-BERT4Rec (unidirectional)", "bidirectional off"), ("BERT4Rec (unidirectional)", "both off")]
    lines += [f"## Ablation at ε = {ae:g}", "",
              markdown_table(["method", "parts", *PAPER["metrics"]],
                             [[m, what, *_cells(_find(summary, m, ae, alt))] for m, what in abl]), "",
              f"## Alternatives at ε = {ae:g} (RR-BERT4Rec)", "",
              markdown_table(["alternatives", *PAPER["metrics"], "Thm 3.1"],
                             [[a, *_cells(_find(summary, "RR-BERT4Rec", ae, a)),
                               "holds (injective)" if a != "nearest" else "does not hold (not injective)"]
                              for a in dict.fromkeys((alt, *cfg["alternatives_ablation"]))]), "",
              f"## Fig. 2 analog: strongly obfuscated window position (RR-BERT4Rec, ε = {cfg['positional_epsilon']:g}, "
              f"p1 = {cfg['p_outside']}, Δn = {cfg['window_fraction']} n)", "",
              "ML-1M here; the paper used ML-20M (not available through pip). Position 0 = the oldest items, "
              "1 = the most recent. Users whose p2 would not exceed p1, or would exceed 1/2 (RQ2's p2 < 1/2, "
              "Thm 3.1), get the uniform keep (see certificates: "
              "`uniform_fallback_users`): their results carry no position effect, so the table also gives the "
              f"means over the *window users* only ({_window_share(summary)}).", "",
              markdown_table(["window position", *PAPER["metrics"], *(c.replace("sampled, ", "") for c in WINDOW_COLS)],
                             [[f"{p:g}", *_cells(_find(summary, "RR-BERT4Rec", cfg["positional_epsilon"], alt, p),
                                                  (*PAPER["metrics"], *WINDOW_COLS))]
                              for p in cfg["positions"]]), ""]
    if any(s["capped"] for s in summary):
        lines += [("† the epoch cap, not early stopping, ended at least one run of this cell." if
                   cfg["train"]["patience"] is not None else
                   f"† at least one run of this cell had its best validation in the last {RISING_WINDOW} epochs of "
                   "the budget: it may still have been improving."), ""]
    lines += ["## Certificates of the published histories", "",
              markdown_table(["release", "published users", "refused", "guarantee"],
                             [[release_name(name, c), c["input"].get("published_users"), c["input"].get("refused_users"),
                               c["summary"].splitlines()[0]] for name, c in res["certificates"].items()]), "",
              *absent_note(res["certificates"]),
              f"Release folders (RecBole atomic files + certificate.json): `{res['published']}` next to this report.", ""]
    lines += trailer(res)
    return "\n".join(lines) + "\n"
