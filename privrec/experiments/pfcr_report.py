"""PFCR's Tables 1–3 analogs, the claim check and each client's certificate, from finished runs.

Metrics: Recall@K (= HR@K, one held-out item per user) and NDCG@K in percent, full ranking over the
domain's items with the history masked, test split; mean ± std over seeds.
"""

from __future__ import annotations

import math
from pathlib import Path

from privrec.experiments import gate as G
from privrec.experiments.caps import may_still_improve
from privrec.experiments.pfcr import cells, codec_of, prompt_variants, run_key, sweep_cells, table3_cells
from privrec.experiments.provenance import environment_note
from privrec.experiments.report import aggregate, markdown_table, partial_note, pm, save_report, trailer
from privrec.experiments.runner import Outcome, RunRecord
from privrec.experiments.stats import paired

COLS = {"R@10": "hr@10", "R@50": "hr@50", "N@10": "ndcg@10", "N@50": "ndcg@50"}
CLAIM = "R@10"


def rows(cfg) -> list[tuple[str, dict, str]]:
    """(row name, cell labels, variant) of Tables 1–3."""
    out = [(m, {"method": m, "mode": None, "strategy": None}, "pretrained") for m in cfg.baselines]
    if cfg.local:
        out += [("PFCR-FD (codes, local)", {"method": "PFCR-FD", "mode": None, "strategy": None}, "pretrained"),
                ("PFCR-F (local + full prompt)", {"method": "PFCR-FD", "mode": None, "strategy": None}, "full"),
                ("local + light prompt", {"method": "PFCR-FD", "mode": None, "strategy": None}, "light")]
    for lab in cells(cfg) + table3_cells(cfg):
        if lab["method"] != "PFCR":
            continue
        names = {"pretrained": "PFCR-D (no prompt)", "light": "PFCR light", "full": "PFCR full"}
        for variant in ("pretrained", *prompt_variants(lab)):
            what = names[variant]
            share = f" (share {lab['popular_share']:g})" if "popular_share" in lab else ""
            out.append((f"{what}, codec {lab['mode']}, {lab['strategy']}{share}", lab, variant))
    return out


def _runs(runs: list[RunRecord], lab: dict) -> list[RunRecord]:
    return [r for r in runs if r.key == run_key(lab, r.seed)]


def _row(lab: dict, rs: list[RunRecord], variant: str, domains: list[str]) -> dict:
    """One table row: the runs' test metrics of ``variant`` in percent (mean ± std over them) and the largest
    true ε of the first run's client certificates."""
    g = rs[0].extra.get("guarantees") or {}
    worst = max(g.values(), key=lambda v: (float(v["epsilon"]), float(v.get("delta") or 0.0))) if g else None
    return {"labels": lab, "variant": variant, "seeds": [r.seed for r in rs],
            "test": {d: aggregate({c: 100 * r.metrics[f"{d}/{variant}"][m] for c, m in COLS.items()} for r in rs)
                     for d in domains},
            "epsilon": None if worst is None else float(worst["epsilon"]),
            "delta": None if worst is None else float(worst.get("delta") or 0.0)}


def summarise(cfg, runs: list[RunRecord], domains: list[str]) -> list[dict]:
    return [{"row": name, **_row(lab, rs, variant, domains)}
            for name, lab, variant in rows(cfg) if (rs := _runs(runs, lab))]


def table3(cfg, runs: list[RunRecord], domains: list[str]) -> list[dict]:
    """Table 3 analog at the paper's stage: the federated model without prompts (PFCR-D; the paper's FedAvg row
    is its Table 2 PFCR-D row), paper codec, under FedAvg and each other strategy, every one on the seeds of
    ``table3_seeds`` only (FedAvg's other seeds, which Table 1 averages, are left out: like for like)."""
    labs = [{"method": "PFCR", "mode": "paper", "strategy": "fedavg"}, *table3_cells(cfg)]
    return [_row(lab, rs, "pretrained", domains) for lab in labs
            if (rs := [r for r in _runs(runs, lab) if r.seed in cfg.table3_seeds])]


def table3_claims(cfg, runs: list[RunRecord], domains: list[str]) -> list[dict]:
    """The paper's Table 3 reading, "FedAvg (PFCR) beats FedProx, SCAFFOLD and PopCode", at PFCR-D's stage (paper
    codec), paired by seed on ``table3_seeds``, per platform; a verdict only where the platform's gate passed."""
    gate = gates(cfg, runs, domains)
    fedavg = {"method": "PFCR", "mode": "paper", "strategy": "fedavg"}
    out = []
    for other in table3_cells(cfg):
        for d in domains:
            ours = {s: v for s, v in _values(runs, fedavg, d).items() if s in cfg.table3_seeds}
            p = paired(ours, _values(runs, other, d))
            if p is not None:
                p = p.to_dict()
                out.append({"domain": d, "theirs": other["strategy"], **p, "verdict": G.claim_verdict(p, gate, d)})
    return out


CLEAR = {"method": "PFCR", "mode": "none", "strategy": "fedavg"}
LOCAL = {"method": "PFCR-FD", "mode": None, "strategy": None}


def _values(runs: list[RunRecord], lab: dict, domain: str, variant: str = "pretrained") -> dict[int, float]:
    key = f"{domain}/{variant}"
    return {r.seed: 100 * r.metrics[key][COLS[CLAIM]] for r in _runs(runs, lab) if key in r.metrics}


def gates(cfg, runs: list[RunRecord], domains: list[str]) -> list[dict]:
    """The positive-control gate per platform, at the federated model's stage: PFCR-D with uploads in the clear
    against PFCR-FD (the same code encoder, no federation) and against the same federation whose partner
    platforms are pure noise."""
    out = []
    for d in domains:
        noise = {**CLEAR, "partner": "noise", "target": d}
        values = {"PFCR-D (clear)": _values(runs, CLEAR, d), "PFCR-FD": _values(runs, LOCAL, d),
                  "PFCR-D (noise partner)": _values(runs, noise, d)}
        out.append(G.gate(d, f"{CLAIM} (PFCR-D stage)", values, "PFCR-D (clear)", "PFCR-FD",
                          "PFCR-D (noise partner)").to_dict())
    return out


def claim(cfg, runs: list[RunRecord], domains: list[str]) -> list[dict]:
    """Does PFCR (full) beat the best single-domain baseline in each domain? Paired by seed, per codec mode, a
    verdict only where the platform's gate passed."""
    singles = [({"method": m, "mode": None, "strategy": None}, "pretrained") for m in cfg.baselines]
    if cfg.local:
        singles.append(({"method": "PFCR-FD", "mode": None, "strategy": None}, "pretrained"))
    gate = gates(cfg, runs, domains)
    out = []
    for lab in cells(cfg):
        if lab["method"] != "PFCR" or lab["strategy"] != "fedavg":
            continue
        ours = {r.seed: r for r in _runs(runs, lab)}
        for d in domains:
            best_name, best_mean, best = None, -math.inf, {}
            for s_lab, variant in singles:
                vals = {r.seed: 100 * r.metrics[f"{d}/{variant}"][COLS[CLAIM]] for r in _runs(runs, s_lab)}
                if vals and sum(vals.values()) / len(vals) > best_mean:
                    best_name, best_mean, best = s_lab["method"], sum(vals.values()) / len(vals), vals
            seeds = sorted(set(ours) & set(best))
            if not seeds:
                continue
            diffs = [100 * ours[s].metrics[f"{d}/full"][COLS[CLAIM]] - best[s] for s in seeds]
            p = paired({s: 100 * ours[s].metrics[f"{d}/full"][COLS[CLAIM]] for s in seeds}, best).to_dict()
            out.append({"mode": lab["mode"], "domain": d, "baseline": best_name, "seeds": seeds,
                        "diff_mean": sum(diffs) / len(diffs), "wins": sum(x > 0 for x in diffs),
                        "p_value": p["p_value"], "verdict": G.claim_verdict(p, gate, d)})
    return out


def fig3(cfg, runs: list[RunRecord], domains: list[str]) -> dict:
    """Fig. 3 analog: test R@10 of the federated model (PFCR-D, no prompt) against eps and against b (paper codec, FedAvg), each point
    with the paper's eps and the true eps per client; validation R@10 against the round t; and the true
    per-coordinate eps of the paper codec over the whole (eps, b) grid (no training needed)."""
    from privrec.privacy.fedcodec_accounting import guarantee

    main = {"method": "PFCR", "mode": "paper", "strategy": "fedavg"}
    points = {"epsilon": [], "buckets": []}
    for lab in [main, *sweep_cells(cfg)]:
        rs = [r for r in runs if r.key == run_key(lab, r.seed) and (lab is not main or r.seed in cfg.sweep_seeds)]
        if not rs:
            continue
        e, b = codec_of(lab, cfg)
        g = rs[0].extra.get("guarantees") or {}
        point = {"epsilon": e, "buckets": b, "true": max((float(v["epsilon"]) for v in g.values()), default=None),
                 "test": {d: aggregate({"R@10": 100 * r.metrics[f"{d}/pretrained"]["hr@10"]} for r in rs)["R@10"]
                          for d in domains}}
        if b == cfg.buckets:
            points["epsilon"].append(point)
        if e == cfg.epsilon:
            points["buckets"].append(point)
    rounds = []
    for r in runs:
        if r.key == run_key(main, r.seed) and "federation" in r.fit.get("parts", {}):
            rounds.append({"seed": r.seed, "valid": [100 * x.get("valid_mean", {}).get("hr@10", float("nan"))
                                                     for x in r.fit["parts"]["federation"]["rounds"]]})
    per_coord = [{"epsilon": e, "buckets": b, "true": guarantee("paper", e, b, 1, 1, delta=None).epsilon}
                 for e in sorted({cfg.epsilon, *cfg.epsilons}) for b in sorted({cfg.buckets, *cfg.buckets_grid})]
    return {"points": points, "rounds": rounds, "per_coordinate": per_coord}


def result(cfg, exp, outcome: Outcome, *, command: str | None, seconds: float, env: dict) -> dict:
    from privrec.data.testbed import get, platform_statistics

    runs = outcome.records
    domains = [d.name for d in exp.data.domains]
    certs = next((r.extra["guarantees"] for r in runs if r.labels["mode"] == "paper" and "guarantees" in r.extra),
                 None)
    return {"kind": "pfcr", "config": cfg.to_dict(), "statistics": exp.data.statistics(), "domains": domains,
            "testbed": get(cfg.testbed).to_dict(), "gates": gates(cfg, runs, domains),
            "testbed_statistics": {d: platform_statistics(exp.data, d) for d in domains},
            "runs": [r.to_dict() for r in runs], "summary": summarise(cfg, runs, domains),
            "claims": claim(cfg, runs, domains), "table3": table3(cfg, runs, domains),
            "table3_claims": table3_claims(cfg, runs, domains), "fig3": fig3(cfg, runs, domains), "certificate_example": certs, "missing": outcome.missing,
            "remaining": outcome.remaining, "environment_note": environment_note(outcome),
            "training_seconds": round(sum(r.fit["seconds"] for r in runs), 1), "seconds": round(seconds, 1),
            "command": command, "environment": env}


def write(out_dir: str | Path, res: dict) -> None:
    from privrec.experiments.pfcr_plot import plots

    save_report(out_dir, res, markdown(res), plots=plots(res))


def training_length(runs: list[dict], patience: int) -> list[str]:
    """One line per run: each training's best epoch / epochs run, '(cap)' where it stopped on the epoch cap
    rather than on patience (a binding cap: that training might have improved further)."""
    body = []
    for r in runs:
        parts = {k: v for k, v in r["fit"].get("parts", {}).items() if k != "federation"}
        if parts:
            body.append([r["key"].replace("|", " · "), ", ".join(
                f"{k} {v['best_epoch']}/{v['epochs_run']}{' (cap)' if may_still_improve(v, patience) else ''}"
                for k, v in parts.items())])
    if not body:
        return []
    return ["## Training length (best epoch / epochs run; '(cap)': stopped by the epoch cap, not by patience)", "",
            markdown_table(["run", "trainings"], body), ""]


def _eps(e) -> str:
    if e is None:
        return "–"
    e = float(e)                         # certificates write an infinite epsilon as the string "inf"
    return "∞" if math.isinf(e) else f"{e:.4g}"


def _model_private(lab: dict) -> str:
    """Whether a row's models are private, towards whom: a platform's uploads are what the codec protects."""
    mode = lab.get("mode")
    if mode is None:
        return "nothing leaves the platform; not towards its own users"
    if mode == "none":
        return "no: uploads in the clear"
    return "towards the other platforms (LDP uploads); not towards its own users"


def _delta(row: dict) -> str:
    """The δ of a row's true (ε, δ) per client: 0 for pure ε-LDP (the paper codec), '–' without a certificate
    (or in a report written before rows kept it)."""
    return "–" if row.get("epsilon") is None or row.get("delta") is None else f"{row['delta']:.2g}"


def markdown(res: dict) -> str:
    domains = res["domains"]
    lines = ["# PFCR on two disjoint MovieLens platforms (Tables 1–3 analogs), testbed "
             f"{res.get('config', {}).get('testbed', 'dense')}", ""]
    if res.get("testbed"):
        lines += G.testbed_markdown(res["testbed"], {d: s[:1] for d, s in res["testbed_statistics"].items()}, "pfcr")
    else:                 # reports written before testbeds
        lines += ["Domains (users and items disjoint):", "",
                  markdown_table(["domain", "users", "items", "interactions", "avg length", "density"],
                                 [[s["domain"], f"{s['users']:,}", f"{s['items']:,}", f"{s['interactions']:,}",
                                   f"{s['avg_seq_len']:.1f}", f"{s['density']:.4f}"] for s in res["statistics"]]), ""]
    c = res["config"]
    lines += [f"Setting: encoder hidden {c['hidden']}, {c['heads']} heads, {c['layers']} layers; {c['n_codebooks']} × "
              f"{c['n_centroids']} PQ codes; {c['rounds']} federated rounds of {c['local_epochs']} local epoch(s) per "
              f"client; training and prompt tuning capped at {c['train']['epochs']} epochs in this invocation "
              f"(patience {c['train']['patience']}; runs reused from earlier invocations keep their own cap, see "
              f"'Training length').", ""]
    header = ["method"] + [f"{d} {c}" for d in domains for c in COLS] + ["true ε per client", "δ", "model private"]
    body = [[s["row"]] + [pm(s["test"][d].get(c), 2) for d in domains for c in COLS]
            + [_eps(s["epsilon"]), _delta(s), _model_private(s["labels"])] for s in res["summary"]]
    lines += ["## Test metrics (percent, mean ± std over seeds)", "", markdown_table(header, body), "",
              "PFCR-VFD = SASRec (ids, no codes, no federation, no prompt); PFCR-FD = codes only; PFCR-D = codes + "
              "federation, no prompt; PFCR-F = codes + prompt, no federation. True (ε, δ) per client: the "
              "guarantee of everything one platform uploads over the whole run (every round, every coordinate), the "
              "largest over the platforms; δ = 0 is pure ε-LDP (the paper codec), the calibrated codec is (ε, δ)-LDP; "
              "'–': nothing leaves the platform. 'model private': every platform trains on its own raw interactions, "
              "so no model is private towards its own users; the codec protects a platform towards the others "
              "(the server and the other clients see only its privatised uploads).", ""]
    t3 = res.get("table3") or []
    if len(t3) > 1:
        lines += [f"## Table 3 analog: federated strategies (PFCR-D: the federated model, no prompt, as the paper's "
                  f"Table 3, whose FedAvg row is its Table 2 PFCR-D row; paper codec; seeds "
                  f"{', '.join(str(x) for x in res['config']['table3_seeds'])}, FedAvg's included)", "",
                  markdown_table(["strategy"] + [f"{d} {c}" for d in domains for c in ("R@10", "N@10")]
                                 + ["seeds", "true ε per client", "δ"],
                                 [[s["labels"]["strategy"] + (f" (share {s['labels']['popular_share']:g})"
                                                               if "popular_share" in s["labels"] else "")]
                                  + [pm(s["test"][d].get(c), 2) for d in domains for c in ("R@10", "N@10")]
                                  + [len(s["seeds"]), _eps(s["epsilon"]), _delta(s)] for s in t3]), "",
                  "SCAFFOLD's control variates are computed from the decoded (privatised) uploads on both sides, so "
                  "it uploads what FedAvg uploads; PopCode federates only the most-used share of code rows (the "
                  "others never leave a client), so its certificate composes fewer coordinates.", ""]
    if res.get("table3_claims"):
        lines += ["The paper's reading of Table 3, FedAvg ahead of every other strategy (PFCR-D, R@10, paired by seed; "
                  "a verdict only where the platform's gate below passed):", "",
                  markdown_table(["platform", "FedAvg minus", "difference (points)", "ahead", "p", "verdict"],
                                 [[c["domain"], c["theirs"], f"{c['difference']['mean']:+.2f}",
                                   f"{c['ahead']}/{len(c['seeds'])}",
                                   "–" if c.get("p_value") is None else f"{c['p_value']:.2g}", c["verdict"]]
                                  for c in res["table3_claims"]]), ""]
    lines += G.markdown(res.get("gates") or [])
    if res["claims"]:
        lines += ["## Claim: PFCR (full) beats the best single-domain baseline in both domains (R@10, paired seeds)",
                  "", "Verdict: the paired mean ahead at p < 0.05 (two-sided paired t), only where the platform's gate "
                  "passed.", "",
                  markdown_table(["codec", "domain", "best single-domain", "seeds", "Δ R@10 (points)", "wins", "p",
                                  "verdict"],
                                 [[c["mode"], c["domain"], c["baseline"], len(c["seeds"]), f"{c['diff_mean']:+.2f}",
                                   f"{c['wins']}/{len(c['seeds'])}",
                                   "–" if c.get("p_value") is None else f"{c['p_value']:.2g}", c["verdict"]]
                                  for c in res["claims"]]), ""]
    f3 = res.get("fig3") or {}
    if f3.get("per_coordinate") and (f3.get("rounds") or any(f3.get("points", {}).values())):
        lines += ["## Fig. 3 analog (paper codec, FedAvg; plot: fig3.png)", "",
                  "True per-coordinate ε of one upload, ln(1 + b(e^ε + 1)), beside the paper's ε (a client uploads "
                  "every coordinate of E every round; its certificate composes them):", "",
                  markdown_table(["paper ε"] + [f"b = {b}" for b in sorted({p["buckets"] for p in f3["per_coordinate"]})],
                                 [[f"{e:g}"] + [f"{p['true']:.3f}" for p in f3["per_coordinate"] if p["epsilon"] == e]
                                  for e in sorted({p["epsilon"] for p in f3["per_coordinate"]})]), ""]
        for axis, name in (("epsilon", "paper ε"), ("buckets", "b")):
            pts = sorted(f3["points"][axis], key=lambda p: p[axis])
            if pts:
                lines += [f"Against {name}:", "",
                          markdown_table(["paper ε", "b"] + [f"{d} R@10 (PFCR-D)" for d in domains]
                                         + ["true ε per client"],
                                         [[f"{p['epsilon']:g}", p["buckets"]]
                                          + [pm(p["test"][d], 2) for d in domains] + [_eps(p["true"])] for p in pts]),
                          ""]
        for r in f3["rounds"]:
            lines += [f"Validation R@10 (mean over clients, percent) by round t, seed {r['seed']}: "
                      + ", ".join(f"{t}: {v:.2f}" for t, v in enumerate(r["valid"], 1)), ""]
    lines += training_length(res["runs"], c["train"]["patience"])
    cert = res.get("certificate_example")
    if cert:
        d, g = next(iter(cert.items()))
        lines += [f"## Certificate of one client ({d}, paper codec)", "", "```",
                  f"definition: {g['definition']}", f"epsilon: {float(g['epsilon']):.6g}   delta: {g['delta']}",
                  f"unit: {g['unit_of_privacy']}", f"parameters: {g['parameters']}",
                  f"valid: {g['valid']}  {g.get('validity', '')}", "```", ""]
    lines += res.get("environment_note", [])
    lines += partial_note(len(res["runs"]), res, show=6)
    return "\n".join(lines + trailer(res)) + "\n"
