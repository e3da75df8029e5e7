"""Reports of ``privrec train`` results (one sequential config, one or more seeds): the Markdown
report with every guarantee the runs were trained under, summary rows, and merging seed runs
trained apart (``privrec results merge``), from reports or from the per-seed progress records."""

from __future__ import annotations

import json
from collections.abc import Sequence

from privrec.errors import ParameterError
from privrec.experiments.provenance import lock_spans, precision_spans
from privrec.experiments.report import aggregate, fmt_num, markdown_table, pm

TIME_ORDER = {"exact": "exact timestamps (ties in file order)",
              "float32": "float32 timestamps, RecBole's order (64-s grid, ties in file order)"}


def aggregates(runs: list[dict]) -> dict:
    """Test and best-validation metrics, mean ± std over the runs (seeds); with every run also tested
    under the other history masking, those metrics too (``test_other_masking``)."""
    out = {"test": aggregate(r["test"]["metrics"] for r in runs),
           "valid": aggregate(r["fit"]["best_valid"]["metrics"] for r in runs if r["fit"]["best_valid"])}
    if runs and all("test_other_masking" in r for r in runs):
        out["test_other_masking"] = aggregate(r["test_other_masking"]["metrics"] for r in runs)
    return out


def summary_rows(result: dict, ks: tuple[int, ...] | None = None, which: str = "test") -> list[list[str]]:
    """One row per cut-off (default: every one the run computed, as the terminal shows them); ``which``:
    ``test`` or ``test_other_masking`` (the same checkpoints under the other history masking)."""
    agg = result["aggregate"][which]
    done = sorted({int(name.split("@")[1]) for name in agg})
    if ks is None:
        ks = tuple(done)
    rows = []
    for k in ks:
        rows.append([result["config"]["model"], f"@{k}"] + [pm(agg.get(f"{m}@{k}")) for m in ("ndcg", "hr", "recall", "mrr")])
    return rows


def markdown(result: dict) -> str:
    cfg = result["config"]
    ds = result["dataset"]
    lines = [
        f"# {cfg['model']} on {cfg['dataset']}",
        "",
        f"Protocol: {result['protocol']}, split {cfg['split']}, max length {cfg['max_len']}, "
        f"seeds {list(cfg['seeds'])}. Test metrics (mean ± std over seeds); model selected on validation "
        f"{cfg['train']['select_metric']}.",
        "",
        markdown_table(["model", "K", "NDCG", "HR", "Recall", "MRR"], summary_rows(result)),
        "",
        *_other_masking(result),
        f"Data after preprocessing {cfg['preprocessing']}: {ds['users']:,} users, {ds['items']:,} items, "
        f"{ds['interactions']:,} interactions; equal-time items ordered by "
        f"{TIME_ORDER[cfg.get('time_precision', 'exact')]}.",
        "",
        *_privacy_lines(result.get("privacy")),
        "| seed | best epoch | epochs run | s/epoch | test NDCG@10 | test HR@10 |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        m = r["test"]["metrics"]
        lines.append(f"| {r['seed']} | {r['fit']['best_epoch']} | {r['fit']['epochs_run']} | "
                     f"{r['fit']['seconds_per_epoch']:.1f} | {m.get('ndcg@10', float('nan')):.4f} | "
                     f"{m.get('hr@10', float('nan')):.4f} |")
    if result.get("item_codes"):
        c = result["item_codes"]
        lines += ["", f"Items read as text codes: {c['n_items']:,} titles (MiniLM) -> {c['n_codebooks']} codebooks x "
                      f"{c['n_centroids']} centroids (relative reconstruction error {c['relative_error']:.3f})."]
    if result.get("feature_guarantee"):
        g = result["feature_guarantee"]
        lines += ["", f"User features: {g['definition']}, epsilon1 = {g['epsilon']:g} ({g['unit_of_privacy']})."]
    for r in result["runs"]:
        if r.get("dpsgd_guarantee"):
            g = r["dpsgd_guarantee"]
            lines += ["", f"Seed {r['seed']}, DP-SGD: epsilon {g['epsilon']:.4g} at delta {g['delta']:g} over "
                          f"{g['parameters']['steps']:,} steps (noise multiplier {g['parameters']['noise_multiplier']:.4g}, "
                          f"clip {g['parameters']['max_grad_norm']:g}); unit: {g['unit_of_privacy']}."]
        if r.get("dpmf_guarantee"):
            g = r["dpmf_guarantee"]
            lines += ["", f"Seed {r['seed']}, DPMF: objective perturbed at the paper's epsilon "
                          f"{g['paper_claim']['epsilon']:g}; **no guarantee proven** for the trained model: "
                          f"{g['validity']}."]
        if r.get("graph_guarantee", {}).get("mechanism") == "edgerand":
            g = r["graph_guarantee"]
            lines += ["", f"Seed {r['seed']}, EdgeRand graphs: epsilon {g['epsilon']:.4g} at delta {g['delta']:g}, one "
                          f"release read by every epoch (noise std {g['parameters']['noise_std']:.4g}); unit: "
                          f"{g['unit_of_privacy']}."]
        elif r.get("graph_guarantee"):
            g, claim = r["graph_guarantee"], r["graph_guarantee"].get("paper_claim", {})
            none = "" if g.get("valid", True) else f" — {g.get('validity') or 'no guarantee'}"
            lines += ["", f"Seed {r['seed']}, noisy aggregation: true epsilon {fmt_num(g['epsilon'])} at delta "
                          f"{g['delta']:g} over {g['parameters']['passes']:,} passes x T = {g['parameters']['T']} "
                          f"(the paper's per-pass epsilon2: {fmt_num(claim.get('epsilon'))}){none}; unit: "
                          f"{g['unit_of_privacy']}."]
    env = result["environment"]
    lines += ["", f"privrec {env['privrec']} (git {env['git_commit']}), torch {env['torch']}, numpy {env['numpy']}, "
                  f"Python {env['python']}.", "",
              f"Training time summed over the runs: {_training_hours(result['runs']):.2f} h, every session of a resumed "
              f"run counted (wall time of the command(s) that produced this report: {result['seconds']:.0f} s)."]
    drift = sorted({p for e in [env, *(m.get("environment") or {} for m in result.get("merged_from", []))]
                    for p in e.get("lock_mismatch") or ()})
    if drift:
        lines += ["", "Installed packages other than the lock's pins (in this run or a merged part): "
                      + "; ".join(drift) + "."]
    merged = result.get("merged_from", [])
    lock_of = lambda e: None if (e or {}).get("lock_sha256") in (None, "not recorded") else e["lock_sha256"]
    finished = {seed: lock_of(m.get("environment")) for m in merged for seed in m.get("seeds", [])}
    spans = [(r["seed"], text) for r in result["runs"]
             if (text := lock_spans(r["fit"], finished.get(r["seed"], lock_of(env))))]
    if spans:
        lines += ["", "Trained some epochs under another lock than the one the seed finished under, or resumed a "
                      "state that did not record its lock: " + "; ".join(f"seed {seed} ({text})" for seed, text in spans)
                  + "."]
    mixed = [(r["seed"], text) for r in result["runs"] if (text := precision_spans(r["fit"]))]
    if mixed:
        lines += ["", "Resumed at another forward-pass precision (`--precision`; validation and test always run "
                      "in fp32): " + "; ".join(f"seed {seed} ({text})" for seed, text in mixed) + "."]
    if len({lock for lock in finished.values() if lock}) > 1:
        lines += ["", "Merged parts finished under different locks: " + "; ".join(
            f"seeds {m['seeds']} under {(m.get('environment') or {}).get('lock_sha256')}" for m in merged) + "."]
    if result.get("command"):
        lines += ["", f"This report was written by: `{result['command']}`"]
    parts = [p for p in result.get("merged_from", []) if p.get("command")]
    if parts:
        lines += ["", "Merged from: " + "; ".join(f"seeds {p['seeds']} by `{p['command']}`" for p in parts) + "."]
    return "\n".join(lines) + "\n"


def _other_masking(result: dict) -> list[str]:
    """The same checkpoints tested under the other history masking, labelled (RecBole does not mask
    a sequential model's history; privrec's default does: the two are not comparable numbers)."""
    if "test_other_masking" not in result["aggregate"]:
        return []
    label = result["runs"][0]["test_other_masking"]["protocol"]
    return [f"The same checkpoints under {label} (a different protocol; do not compare across the two):", "",
            markdown_table(["model", "K", "NDCG", "HR", "Recall", "MRR"],
                           summary_rows(result, which="test_other_masking")), ""]


def _privacy_lines(privacy: dict | None) -> list[str]:
    if not privacy:
        return ["Trained on the raw data (no privacy mechanism).", ""]
    inp = privacy["input"]
    return [f"**Trained on a randomised-response release** (`release/`, its `certificate.json`): "
            f"{privacy['summary'].splitlines()[0]}. Perturbed: {inp['perturbed']}. "
            f"{privacy['published_users']:,} of {inp['users']:,} users published ({inp['refused_users']:,} refused, "
            f"short histories: {inp['short_histories']}); alternatives: {inp['alternatives']}.",
            f"Not protected: {inp['not_protected']}.", ""]


def _comparable(config: dict) -> dict:
    """A sequential config without what legitimately differs between seed runs: the seeds,
    progress bars and the device setting (each part's environment is kept in ``merged_from``)."""
    c = json.loads(json.dumps(config))
    c.pop("seeds", None)
    if c.get("fields") is None:         # configs written before --*-field existed have no key: the same thing
        c.pop("fields", None)
    for part in ("train", "eval"):
        for key in ("seed", "progress", "device"):
            c.get(part, {}).pop(key, None)
    return c


def same_configuration(a: dict, b: dict) -> bool:
    """Whether two sequential configs differ only in what differs between seed runs (:func:`_comparable`)."""
    return _comparable(a) == _comparable(b)


def keep_earlier_seeds(result: dict, earlier: dict | None) -> tuple[dict, list[dict]]:
    """``result`` plus the runs of ``earlier`` (a report in the same output) for seeds it does not hold,
    where both are one configuration on the same data and protocol; else ``result`` alone. Returns the
    result and the runs kept from ``earlier`` (their checkpoints must travel with them)."""
    if not (isinstance(earlier, dict) and earlier.get("kind") == "sequential" and isinstance(earlier.get("runs"), list)
            and isinstance(earlier.get("config"), dict) and same_configuration(earlier["config"], result["config"])
            and earlier.get("dataset") == result["dataset"] and earlier.get("protocol") == result["protocol"]):
        return result, []
    mine = {run["seed"] for run in result["runs"]}
    kept = [run for run in earlier["runs"] if isinstance(run, dict) and run.get("seed") not in mine]
    if not kept:
        return result, []
    runs = sorted(kept + result["runs"], key=lambda run: run["seed"])
    return {**result, "config": {**result["config"], "seeds": [run["seed"] for run in runs]}, "runs": runs,
            "aggregate": aggregates(runs),
            "seconds": round(float(result["seconds"]) + float(earlier.get("seconds") or 0.0), 1)}, kept


def result_from_progress(records: Sequence[dict], dataset: dict, source: str = "progress records") -> dict:
    """A result shaped like :func:`privrec.experiments.sequential.run`'s from the per-seed lines
    ``privrec train`` appends to ``OUT.progress.jsonl`` (``config``, ``run``, ``environment``): the
    seeds of a run that never wrote its report (killed for good, or trained across machines or
    sessions) can then be merged. ``dataset``: the summary of the data the configuration names (the
    lines do not carry it; the caller rebuilds it). A seed recorded twice (a resumed run tests its
    finished seed again) keeps its last line; checkpoints were never written next to the records, so
    runs name none. Lines written before records carried their environment say "not recorded"."""
    records = [r for r in records if isinstance(r.get("config"), dict) and isinstance(r.get("run"), dict)]
    if not records:
        raise ParameterError(f"{source}: no progress record (lines with 'config' and 'run' written by `privrec train`)")
    base = _comparable(records[0]["config"])
    by_seed = {}
    for r in records:
        if _comparable(r["config"]) != base:
            raise ParameterError(f"{source}: records of different configurations; give one run's progress file")
        by_seed[r["run"]["seed"]] = r
    runs = [{k: v for k, v in by_seed[s]["run"].items() if k != "checkpoint"} for s in sorted(by_seed)]
    missing = dict.fromkeys(("privrec", "git_commit", "lock_sha256", "python", "torch", "numpy"), "not recorded")
    config = records[0]["config"]
    return {
        "kind": "sequential",
        "config": {**config, "seeds": [r["seed"] for r in runs]},
        "dataset": dataset,
        "protocol": config["eval"]["label"],
        "runs": runs,
        "aggregate": aggregates(runs),
        "seconds": round(sum(float(r["fit"]["seconds"]) for r in runs), 1),
        "environment": records[-1].get("environment") or missing,
        "command": records[-1].get("command"),
    }


def _training_hours(runs: Sequence[dict]) -> float:
    """Hours of training over the runs: each run's ``fit["seconds"]``, which a resumed run carries over from
    its state, so a run trained across sessions counts every session (a report's ``seconds`` is the wall
    time of the command(s) that wrote it only)."""
    return sum(float(r["fit"].get("seconds") or 0.0) for r in runs) / 3600


def merge_seeds(results: Sequence[dict]) -> dict:
    """One result from several ``run`` results of the same configuration with different seeds
    (seeds trained in separate processes or on separate machines): runs concatenated in seed
    order, test/valid aggregates recomputed (mean ± sample std). Raises if the configurations,
    datasets or protocols differ, or a seed appears twice."""
    if not results:
        raise ParameterError("nothing to merge: give at least one results.json")
    for r in results:
        if r.get("kind") != "sequential":
            raise ParameterError(f"can only merge `privrec train` results (kind 'sequential'), got kind {r.get('kind')!r}")
    base = _comparable(results[0]["config"])
    for r in results[1:]:
        other = _comparable(r["config"])
        if other != base:
            diff = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
            raise ParameterError(f"results differ in configuration ({', '.join(diff)}); only seed runs of one "
                                 "configuration can be merged")
        if r["dataset"] != results[0]["dataset"] or r["protocol"] != results[0]["protocol"]:
            raise ParameterError("results were computed on different data or protocols; they cannot be merged")
    runs = sorted((run for r in results for run in r["runs"]), key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"seed(s) {sorted({s for s in seeds if seeds.count(s) > 1})} appear in more than one result")
    config = {**results[0]["config"], "seeds": seeds}
    return {
        "kind": "sequential",
        "config": config,
        "dataset": results[0]["dataset"],
        "protocol": results[0]["protocol"],
        "runs": runs,
        "aggregate": aggregates(runs),
        "seconds": round(sum(float(r["seconds"]) for r in results), 1),
        "environment": results[-1]["environment"],
        "merged_from": [{"seeds": [run["seed"] for run in r["runs"]], "environment": r["environment"],
                         "command": r.get("command")} for r in results],
    }
