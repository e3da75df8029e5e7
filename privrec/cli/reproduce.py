"""``privrec reproduce SYSTEM``: one command per paper result."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from privrec.cli.fields import field_options, fields_of
from privrec.cli.options import (
    command_line,
    default_out,
    grid_options,
    parse_seeds,
    seeds_checked,
    testbed_options,
)
from privrec.errors import ParameterError
from privrec.experiments.parallel import RayTarget


@click.group()
def reproduce() -> None:
    """Reproduce a paper's tables on real data (reports: JSON, Markdown, plots)."""


def _grid_setup(module, quick: bool, seeds: str | None, methods: str | None, threads: int | None) -> dict:
    """What every ML-1M grid command does first: torch threads, ML-1M fetched, the config's keyword
    arguments from ``module.QUICK`` (with --quick), --seeds and --methods."""
    import torch

    from privrec.data.fetch import fetch

    torch.set_num_threads(threads or 1)
    fetch("ml-1m")
    kw = dict(module.QUICK) if quick else {}
    if seeds:
        kw["seeds"] = parse_seeds(seeds)
    if methods:
        kw["methods"] = tuple(m.strip() for m in methods.split(","))
    return kw


def _launch(reproduce_fn, cfg, name: str, quick: bool, out: str, epochs: int | None, log, resume: bool,
            add_progress: tuple[str, ...], report_only: bool, jobs: int, threads: int | None, ray: RayTarget | None = None):
    """The shared tail of the grid commands: --epochs applied, the run announced, the grid reproduced."""
    if epochs:
        cfg = replace(cfg, train=replace(cfg.train, epochs=epochs))
    log(f"{name} reproduction ({'quick' if quick else 'full'}): seeds {list(cfg.seeds)}, {cfg.train.epochs} epochs "
        f"max, report in {out}")
    from privrec.utils.logs import run_log

    command = command_line()
    with run_log(out, command):
        return cfg, reproduce_fn(cfg, out, log=log, resume=resume, add_progress=add_progress,
                                 train_missing=not report_only, keep_capped_states=not quick,
                                 command=command, workers=jobs, threads=threads or 1, ray=ray)


def run_pricdsr(quick: bool, out: str, seeds: str | None = None, epochs: int | None = None,
                threads: int | None = None, resume: bool = True, add_progress: tuple[str, ...] = (),
                report_only: bool = False, sources: tuple[str, ...] = (), domain_field: str | None = None,
                jobs: int = 1, epsilons: str | None = None, testbed: str = "dense",
                fields: dict[str, str] | None = None, ray: RayTarget | None = None) -> dict:
    import torch

    from privrec.data.fetch import fetch
    from privrec.experiments import pricdsr as P
    from privrec.experiments.report import pm, text_table
    from privrec.experiments.runner import safe_name

    # DASL's ops are small: one thread avoids OpenMP spin-waits that stall badly on a busy machine
    torch.set_num_threads(threads or 1)
    from privrec.utils.logs import echo as log
    cfg = P.PriCDSRConfig(**P.QUICK) if quick else P.PriCDSRConfig()
    data = None
    if sources and (list(sources) != ["ml-1m"] or domain_field):
        from privrec.data.crossdomain import load_cross_domain

        data = load_cross_domain(sources, domain_field, fields=fields)
        a, b = data.names
        if "<-" in a + b or safe_name(a).lower() == safe_name(b).lower():
            raise ParameterError(f"domain names {data.names} must not contain '<-' and must differ as file names "
                                   "(letters, digits, '.', '-'); rename the values of the domain field")
        # file names only: the same data typed as another path resumes the same runs
        label = " + ".join(Path(s).name for s in sources) + (f" by {domain_field}" if domain_field else "")
        cfg = replace(cfg, dataset=label, directions=(f"{a}<-{b}", f"{b}<-{a}"), table3_directions=(f"{a}<-{b}",))
    else:
        fetch("ml-1m")
    if seeds:
        cfg = replace(cfg, seeds=parse_seeds(seeds))
    if epochs:
        cfg = replace(cfg, train=replace(cfg.train, epochs=epochs))
    if testbed != "dense":
        cfg = replace(cfg, testbed=testbed, epsilons=P.QUICK_TESTBED_EPSILONS if quick else P.TESTBED_EPSILONS)
    if epsilons:
        try:
            values = tuple(float(e) for e in epsilons.split(","))
        except ValueError:
            raise ParameterError(f"--epsilons takes comma-separated numbers, got {epsilons!r}") from None
        cfg = replace(cfg, epsilons=values)
    log(f"PriCDSR reproduction ({'quick' if quick else 'full'}, testbed {cfg.testbed}): seeds {list(cfg.seeds)}, "
        f"{cfg.train.epochs} epochs max, report in {out}")
    command = command_line()
    from privrec.utils.logs import run_log

    with run_log(out, command):
        result = P.reproduce(cfg, out, log=log, data=data, resume=resume, add_progress=add_progress,
                             train_missing=not report_only, keep_capped_states=not quick, command=command,
                             workers=jobs, threads=threads or 1, ray=ray)
    rows = [[f"{s['target']} ← {s['aux']}",
             s["variant"] + (f" (ε={s['epsilon']:g})" if s["epsilon"] is not None else "") + ("†" if s["capped"] else "")]
            + [pm(s["test"].get(c)) for c in ("ndcg@10 (sampled)", "hr@10 (sampled)", "ndcg@10 (full)")]
            for s in result["summary"]]
    where = "ML-1M by genre" if data is None else cfg.dataset
    click.echo(f"\nPriCDSR on {where}, testbed {cfg.testbed}, test split "
               f"({'quick: subsample, 1 seed' if quick else 'full'}):")
    click.echo(text_table(["target ← aux", "model", "NDCG@10 sampled", "HR@10 sampled", "NDCG@10 full"], rows))
    for g in result["gates"]:
        click.echo(f"  gate {g['where']}, {g['metric']}: {g['verdict']}")
    click.echo(f"\nreport: {out}/results.md, plot: {out}/privacy_utility.png")
    return result


@reproduce.command("pricdsr")
@click.option("--quick", is_flag=True, help="A user subsample, L = 30, 4 epochs, one seed, ε ∈ {1, 10, 50} (under 10 min on 2 cores).")
@testbed_options("pricdsr")
@click.option("--seeds", default=None, callback=seeds_checked, help="Comma-separated seeds (default 0,1,2; quick: 0).")
@click.option("--epochs", type=int, default=None, help="Maximum epochs (early stopping on validation).")
@click.option("--epsilons", default=None,
              help="Comma-separated ε of the Table III sweep (default 1,2,5,10,20,50; quick: 1,10,50). "
                   "'--epsilons 10' trains Table II only; the finished runs count toward a later full sweep.")
@grid_options
@click.option("--data", "sources", multiple=True,
              help="Your own data instead of ML-1M by genre: one file (.inter/.csv/.parquet) with --domain-field, "
                   "or --data twice, one file per domain sharing the user id field (domains named by file stem).")
@click.option("--domain-field", default=None, help="With one --data file: the column naming each row's domain "
                                                   "(exactly two values).")
@field_options
def pricdsr(quick: bool, out: str, seeds: str | None, epochs: int | None, epsilons: str | None,
            threads: int | None, jobs: int, ray: RayTarget | None,
            resume: bool, add_progress: tuple[str, ...], report_only: bool, sources: tuple[str, ...],
            domain_field: str | None, testbed: str, **field_kw) -> None:
    """PriCDSR Tables II-III analogs: DASL-single, DASL, PriCDSR-DASL on ML-1M split by genre.

    The full run (3 seeds, both directions, 6 epsilons) takes hours on a CPU; every finished
    training run is saved, so an interrupted run continues where it stopped."""
    if domain_field and not sources:
        raise click.UsageError("--domain-field needs --data FILE")
    if fields_of(**field_kw) and not sources:
        raise ParameterError("--user-field/--item-field/--rating-field/--time-field name the columns of your --data "
                             "file(s); without --data the data is ML-1M, whose columns privrec knows")
    run_pricdsr(quick, default_out("pricdsr", out, testbed, quick), seeds, epochs, threads, resume, add_progress,
                report_only, sources, domain_field, jobs, epsilons, testbed, fields_of(**field_kw), ray)


@reproduce.command("baselines")
@click.option("--quick", is_flag=True, help="Beauty's first 2,000 users, SASRec and GRU4Rec, 3 epochs, one seed (minutes).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Report folder [default: reports/baselines, with -quick for --quick].")
@click.option("--seeds", default=None, callback=seeds_checked, help="Comma-separated seeds (default 0,1,2; quick: 0).")
@click.option("--epochs", type=int, default=None, help="Maximum epochs (default 200; early stopping on validation).")
@click.option("--datasets", default=None, help="Comma-separated, of beauty,sports,toys,yelp (default all).")
@click.option("--models", default=None, help="Comma-separated, of sasrec,gru4rec,bert4rec (default all).")
@grid_options
def baselines(quick: bool, out: str | None, seeds: str | None, epochs: int | None, datasets: str | None,
              models: str | None, threads: int | None, jobs: int, ray: RayTarget | None, resume: bool,
              add_progress: tuple[str, ...], report_only: bool) -> None:
    """SASRec, GRU4Rec and BERT4Rec on S3Rec's files (Amazon Beauty, Sports, Toys; Yelp) under S3Rec's protocol,
    beside the rows S3Rec published (docs/baselines.md).

    Each model x dataset x seed is one run: saved when it finishes, resumed when interrupted, parallel with
    --jobs or --ray."""
    import torch

    from privrec.experiments import baselines as B
    from privrec.utils.logs import echo as log

    torch.set_num_threads(threads or 1)
    kw = dict(B.QUICK) if quick else {}
    if seeds:
        kw["seeds"] = parse_seeds(seeds)
    for name, text in (("datasets", datasets), ("models", models)):
        if text:
            kw[name] = tuple(x.strip().lower() for x in text.split(",") if x.strip())
    cfg, result = _launch(B.reproduce, B.BaselinesConfig(**kw), "baselines", quick, default_out("baselines", out,
                          quick=quick), epochs, log, resume, add_progress, report_only, jobs, threads, ray)
    click.echo(f"\nreport: {default_out('baselines', out, quick=quick)}/results.md")


@reproduce.command("rr")
@click.option("--quick", is_flag=True, help="400 users, L = 20, 2 epochs, one seed, ε ∈ {0.1, 0.001} (a few minutes).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Report folder [default: reports/rr, reports/rr-DATASET for another dataset, with -quick for --quick].")
@click.option("--seeds", default=None, callback=seeds_checked, help="Comma-separated seeds (default 0,1,2; quick: 0).")
@click.option("--epochs", type=int, default=None, help="Maximum epochs (early stopping on validation).")
@click.option("--epsilons", default=None, help="Comma-separated ε of Fig. 1 (default 0.1,0.01,0.001,0.0001).")
@click.option("--methods", default=None, help="Comma-separated Fig. 1 methods (default GRU4Rec,BERT4Rec,RR-BERT4Rec).")
@click.option("--no-extras", is_flag=True, help="Fig. 1 only: no ablations, alternatives or Fig. 2 runs.")
@click.option("--dataset", default="ml-1m", show_default=True,
              help="A registered dataset: ml-1m (titles: MiniLM alternatives) or one of the papers' item-attribute "
                   "sets, e.g. beauty (Amazon Beauty, the paper's short-history case: alternatives from attributes).")
@grid_options
def rr(quick: bool, out: str, seeds: str | None, epochs: int | None, epsilons: str | None, methods: str | None,
       no_extras: bool, dataset: str, threads: int | None, jobs: int, ray: RayTarget | None, resume: bool, add_progress: tuple[str, ...],
       report_only: bool) -> None:
    """Mu & Lim's Fig. 1 (GRU4Rec, BERT4Rec, RR-BERT4Rec on randomised-response histories, ε from 1/10 to
    1/10,000), its ablations and Fig. 2 (position of the strongly obfuscated window) on ML-1M.

    The full grid takes many CPU-hours; every finished run is saved and an interrupted run resumes."""
    from privrec.experiments import rr as R
    from privrec.experiments.report import pm, text_table
    from privrec.utils.logs import echo as log
    kw = _grid_setup(R, quick, seeds, methods, threads)
    try:
        if epsilons:
            kw["epsilons"] = tuple(float(e) for e in epsilons.split(","))
    except ValueError:
        raise ParameterError("--epsilons takes comma-separated numbers") from None
    if no_extras:
        kw.update(ablation_methods=(), alternatives_ablation=(), positions=())
    from privrec.data.registry import get_spec

    get_spec(dataset)                                   # an unknown name: one line naming the registered ones
    kw["dataset"] = dataset
    out = default_out("rr" if dataset == "ml-1m" else f"rr-{dataset}", out, quick=quick)
    cfg, result = _launch(R.reproduce, R.RRConfig(**kw), "randomised-response", quick, out, epochs, log, resume,
                          add_progress, report_only, jobs, threads, ray)
    rows = [[s["method"], "–" if s["epsilon"] is None else f"{s['epsilon']:g}", s["alternatives"] or "–",
             "–" if s["position"] is None else f"{s['position']:g}"]
            + [pm(s["test"].get(c)) for c in ("hr@1 (sampled)", "ndcg@5 (sampled)", "ndcg@10 (full)")]
            for s in result["summary"]]
    click.echo(f"\nrandomised response on {dataset}, test split ({'quick: 400 users, 1 seed' if quick else 'full'}):")
    click.echo(text_table(["method", "ε", "alternatives", "window", "HR@1 sampled", "NDCG@5 sampled",
                           "NDCG@10 full"], rows))
    click.echo(f"\nreport: {out}/results.md")


@reproduce.command("pricdr")
@click.option("--quick", is_flag=True, help="600 users, 3 epochs, one seed, a few sweep points (a few minutes).")
@testbed_options("pricdr")
@click.option("--seeds", default=None, callback=seeds_checked, help="Comma-separated Table 1 seeds (default 0,1,2; quick: 0).")
@click.option("--epochs", type=int, default=None, help="Maximum epochs (early stopping on validation).")
@click.option("--methods", default=None, help="Comma-separated Table 1 methods (default: all nine).")
@click.option("--no-sweeps", is_flag=True, help="Table 1 only: no Figs. 2-5 runs.")
@click.option("--sweep-epochs", type=click.IntRange(min=1), default=None,
              help="Maximum epochs of the runs only Figs. 2-5 need (default 12; Table 1's runs keep --epochs).")
@click.option("--figures", default=None, help="Comma-separated sweeps to run: 2, 2b, 3, 4, 5 (default: all). "
                                              "'--seeds 0 --figures 2' fits in about 8 CPU-hours on ML-1M.")
@grid_options
def pricdr(quick: bool, out: str, seeds: str | None, epochs: int | None, methods: str | None, no_sweeps: bool,
           sweep_epochs: int | None, figures: str | None, threads: int | None, jobs: int, ray: RayTarget | None, resume: bool,
           add_progress: tuple[str, ...], report_only: bool, testbed: str) -> None:
    """PriCDR's Table 1 (single-domain baselines, DDTCDR, PriCDR-SYM/-J/-S, HeteroCDR on the raw source,
    a pure-noise control) in both directions of ML-1M's genre domains, and Figs. 2-5 (ε, n', SJLT
    density, source sparsity), each point with its release's true ε.

    Every finished run is saved; an interrupted reproduction resumes."""
    from privrec.experiments import pricdr as P
    from privrec.experiments.report import pm, text_table
    from privrec.utils.logs import echo as log
    kw = _grid_setup(P, quick, seeds, methods, threads)
    out = default_out("pricdr", out, testbed, quick)
    if testbed != "dense":    # the paper's rating rule, and the figures that read a release's signal
        kw.update(testbed=testbed, min_rating=P.TESTBED_MIN_RATING)
        if not figures and not quick:
            kw.update(P.only_figures(P.TESTBED_FIGURES))
    if no_sweeps:
        kw["sweep_direction"] = None
    if sweep_epochs:
        kw["sweep_epochs"] = sweep_epochs
    if figures:
        kw.update(P.only_figures([f.strip() for f in figures.split(",") if f.strip()]))
    cfg, result = _launch(P.reproduce, P.PriCDRConfig(**kw), "PriCDR", quick, out, epochs, log, resume, add_progress,
                          report_only, jobs, threads, ray)
    from privrec.experiments.pricdr_report import TABLE, table1_cells

    for target, source in cfg.directions:
        rows = []
        for m, lab in table1_cells(cfg.to_dict(), target, source).items():
            s = next((s for s in result["summary"] if all(s[k] == lab[k] for k in lab)), None)
            rows.append([m] + [pm(s["test"].get(c)) if s else "–" for c in TABLE])
        click.echo(f"\nPriCDR, target {target} <- source {source}, test ({'quick: 600 users, 1 seed' if quick else 'full'}):")
        click.echo(text_table(["method", *TABLE], rows))
    for g in result["gates"]:
        click.echo(f"  gate {g['where']}: {g['verdict']}")
    for c in result["claims"]:
        if c["verdict"] != "(control)":
            click.echo(f"  {c['direction']}: {c['ours']} {c['relation']} {c['theirs']}: {c['verdict']}")
    click.echo(f"\nreport: {out}/results.md")


@reproduce.command("dipsgnn")
@click.option("--quick", is_flag=True, help="600 users, d = 32, 2 epochs, one seed, one point per figure (minutes).")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Report folder [default: reports/dipsgnn, with -quick for --quick].")
@click.option("--seeds", default=None, callback=seeds_checked, help="Comma-separated Table 2 seeds (default 0,1,2; quick: 0).")
@click.option("--epochs", type=int, default=None, help="Maximum epochs (default 10, the paper's).")
@click.option("--methods", default=None, help="Comma-separated Table 2 methods (default: all nine: BPR-MF, SASRec, "
                                              "GRU4Rec, SR-GNN, APGNN, DPMF, DP-SGD, EdgeRand, DIPSGNN).")
@click.option("--no-sweeps", is_flag=True, help="Table 2 only: no Figs. 3-7 runs.")
@click.option("--figures", default=None, help="Comma-separated figures to run: 3, 4, 5, 6, 7 (default: all). "
                                              "'--figures 3,4' adds 4 runs of ~45 CPU-min each on ML-1M.")
@grid_options
def dipsgnn(quick: bool, out: str, seeds: str | None, epochs: int | None, methods: str | None, no_sweeps: bool,
            figures: str | None, threads: int | None, jobs: int, ray: RayTarget | None, resume: bool, add_progress: tuple[str, ...], report_only: bool) -> None:
    """DIPSGNN's Table 2 (non-private SASRec, GRU4Rec, SR-GNN, APGNN; private DP-SGD, EdgeRand, DIPSGNN at
    ε₁ = 20, ε₂ = 5 under the paper's and honest accounting) and Figs. 3-7 (ε₂, ε₁, T, C, ablation) on ML-1M,
    each private run with its true ε.

    Every finished run is saved; an interrupted reproduction resumes."""
    from privrec.experiments import dipsgnn as D
    from privrec.experiments.dipsgnn_report import COLS, find
    from privrec.utils.logs import echo as log
    kw = _grid_setup(D, quick, seeds, methods, threads)
    if no_sweeps:
        kw.update(epsilon2s=(), epsilon1s=(), steps_grid=(), clips=(), ablation=False)
    if figures:
        kw.update(D.only_figures([f.strip() for f in figures.split(",") if f.strip()]))
    out = default_out("dipsgnn", out, quick=quick)
    cfg, result = _launch(D.reproduce, D.DIPSGNNConfig(**kw), "DIPSGNN", quick, out, epochs, log, resume, add_progress,
                          report_only, jobs, threads, ray)
    from privrec.experiments.dipsgnn_report import _eps, _name
    from privrec.experiments.report import text_table

    rows = []
    for lab in result["table"]:
        s = find(result["summary"], lab)
        rows.append([_name(lab)] + [f"{s['test'][c]['mean']:.2f}" if s else "–" for c in list(COLS)[:4]]
                    + _eps(s["privacy"] if s else None)[:2])
    click.echo(f"\nDIPSGNN Table 2 analog, ML-1M, test, percent ({'quick: 600 users, 1 seed' if quick else 'full'}):")
    click.echo(text_table(["method", *list(COLS)[:4], "ε₂ (paper's)", "true ε"], rows))
    for c in result["claims"]:
        click.echo(f"  {_name(c['ours'])} vs EdgeRand: better on {c['better']}/{len(c['seeds'])} seeds, R@20 gap "
                   f"{c['gap']['mean']:+.1%} (paper {c['paper']:+.2%})")
    click.echo(f"\nreport: {out}/results.md")


@reproduce.command("pfcr")
@click.option("--quick", is_flag=True, help="400 users per domain, small encoder, 3 rounds, one seed (minutes).")
@testbed_options("pfcr")
@click.option("--seeds", default=None, callback=seeds_checked, help="Comma-separated seeds (default 0,1,2; quick: 0).")
@click.option("--epochs", type=int, default=None, help="Maximum epochs of single-domain training and prompt tuning.")
@click.option("--rounds", type=int, default=None, help="Federated rounds (default 10, the paper's; 30 on a cold testbed, PFCR-FD's epoch budget).")
@click.option("--local-epochs", type=int, default=None,
              help="Local epochs per client per round (default 1, the official code's).")
@click.option("--mode", "runtime", type=click.Choice(["simulation", "deployment"]), default="simulation",
              show_default=True, help="Flower's simulation engine, or a SuperLink and one SuperNode per domain as "
                                      "processes on 127.0.0.1, over TLS with authenticated SuperNodes (credentials "
                                      "made per run; docs/pfcr.md).")
@click.option("--insecure", is_flag=True, help="--mode deployment in plaintext, without SuperNode authentication "
                                               "(on 127.0.0.1 only).")
@click.option("--epsilon", type=float, default=None, help="Codec ε (default 0.5).")
@click.option("--buckets", type=int, default=None, help="Codec buckets b, a power of two (default 64).")
@click.option("--hidden", type=int, default=None, help="Encoder and prompt width (default 300, the paper's).")
@click.option("--codecs", default=None, help="Comma-separated codec modes of the federation (default none,paper,"
                                             "calibrated).")
@click.option("--strategies", default=None, help="Comma-separated Table 3 strategies beside FedAvg, paper codec "
                                                 "(default fedprox,scaffold,popcode; 'none' for none).")
@click.option("--no-fedprox", is_flag=True, help="Same as --strategies none (kept for older commands).")
@click.option("--baselines", default=None, help="Comma-separated single-platform baselines (default GRU4Rec,SASRec,"
                                                "BERT4Rec; 'none' for none).")
@click.option("--patience", type=click.IntRange(min=1), default=None,
              help="Early-stopping patience of single-domain training and prompt tuning (default 10, the paper's).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Batch size of every training, local rounds included (default 128; the paper's 1,024 gives "
                   "ML-1M's platforms ~6 steps per epoch).")
@click.option("--no-federation", is_flag=True, help="No federated runs: the single-platform baselines and "
                                                     "PFCR-FD / PFCR-F only.")
@click.option("--no-local", is_flag=True, help="No PFCR-FD / PFCR-F runs (the code encoder trained alone).")
@click.option("--no-sweeps", is_flag=True, help="No Fig. 3 runs (ε and b sweeps).")
@grid_options
def pfcr(quick: bool, out: str, seeds: str | None, epochs: int | None, rounds: int | None, local_epochs: int | None,
         runtime: str, insecure: bool,
         epsilon: float | None, buckets: int | None, hidden: int | None, codecs: str | None, strategies: str | None,
         no_fedprox: bool, baselines: str | None, patience: int | None, batch_size: int | None, no_federation: bool,
         no_local: bool,
         no_sweeps: bool, threads: int | None, jobs: int, ray: RayTarget | None, resume: bool, add_progress: tuple[str, ...], report_only: bool,
         testbed: str) -> None:
    """PFCR's Tables 1-3 on two disjoint ML-1M platforms (action / drama; users and items disjoint):
    GRU4Rec, SASRec, BERT4Rec (cloze), the code encoder alone (PFCR-FD, PFCR-F), and the federation on Flower (PFCR-D, light
    and full prompting) with uploads in the clear, the paper's codec and the calibrated codec; FedAvg, and
    FedProx, SCAFFOLD and PopCode (Table 3). Each client's certificate states its true ε over every round.

    Every finished run is saved; an interrupted reproduction resumes."""
    from privrec.experiments import pfcr as P
    from privrec.experiments.pfcr_report import _eps
    from privrec.experiments.report import text_table
    from privrec.utils.logs import echo as log
    kw = _grid_setup(P, quick, seeds, None, threads)
    if insecure and runtime != "deployment":
        raise ParameterError("--insecure turns off TLS and SuperNode authentication of --mode deployment; give both")
    kw["runtime"] = "deployment-insecure" if insecure else runtime
    out = default_out("pfcr", out, testbed, quick)
    if testbed != "dense":
        kw.update({"testbed": testbed, **({} if quick else P.TESTBED)})
    if codecs:
        kw["modes"] = tuple(m.strip() for m in codecs.split(","))
    if strategies is not None:
        kw["strategies"] = () if strategies.strip() == "none" else tuple(x.strip() for x in strategies.split(","))
    if no_fedprox:
        kw["strategies"] = ()
    if baselines is not None:
        kw["baselines"] = () if baselines.strip() == "none" else tuple(x.strip() for x in baselines.split(","))
    if no_sweeps:
        kw.update(epsilons=(), buckets_grid=())
    if no_local:
        kw["local"] = False
    if no_federation:
        kw.update(modes=(), strategies=(), epsilons=(), buckets_grid=())
    for name, value in (("rounds", rounds), ("local_epochs", local_epochs), ("epsilon", epsilon), ("buckets", buckets), ("hidden", hidden)):
        if value is not None:
            kw[name] = value
    cfg = P.PFCRConfig(**kw)
    budget = {k: v for k, v in (("patience", patience), ("batch_size", batch_size)) if v is not None}
    if budget:
        cfg = replace(cfg, train=replace(cfg.train, **budget))
    cfg, result = _launch(P.reproduce, cfg, "PFCR", quick, out, epochs, log, resume, add_progress,
                          report_only, jobs, threads, ray)
    doms = result["domains"]
    rows = [[s["row"]] + [f"{s['test'][d]['R@10']['mean']:.2f}" for d in doms] + [_eps(s["epsilon"])]
            for s in result["summary"]]
    click.echo(f"\nPFCR Tables 1-3 analog, test Recall@10 percent ({'quick' if quick else 'full'}):")
    click.echo(text_table(["method", *[f"{d} R@10" for d in doms], "true ε per client"], rows))
    for g in result["gates"]:
        click.echo(f"  gate {g['where']}: {g['verdict']}")
    for c in result["claims"]:
        click.echo(f"  PFCR full ({c['mode']}) vs {c['baseline']} on {c['domain']}: {c['diff_mean']:+.2f} points, "
                   f"{c['wins']}/{len(c['seeds'])} seeds: {c['verdict']}")
    click.echo(f"\nreport: {out}/results.md")
