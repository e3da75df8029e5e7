"""``privrec results merge``: one mean ± std report from seed runs trained separately."""

from __future__ import annotations

import json
from pathlib import Path

import click

from privrec.errors import DataFormatError


@click.group()
def results() -> None:
    """Work with result reports (results.json)."""


@results.command("merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Folder for the merged results.json/.md.")
def merge(files: tuple[str, ...], out: str) -> None:
    """Merge `privrec train` results of one configuration (different seeds) into one report with
    mean ± std over all seeds. FILES: results.json reports, or OUT.progress.jsonl records of seeds
    whose run never wrote its report (e.g. seeds trained in parallel, one --out each)."""
    from privrec.experiments import sequential as seq
    from privrec.experiments import sequential_report as SR
    from privrec.experiments.report import save_report, text_table
    from privrec.release.paths import check_output
    from privrec.utils.io import read_json_lines
    from privrec.utils.outputs import check_replaceable

    check_output(out, files, "--out")                # never over its own inputs or into the dataset cache
    check_replaceable(out, "merge")
    loaded = []
    for f in files:
        if f.endswith(".jsonl"):
            records = [r for r in read_json_lines(f) if isinstance(r.get("config"), dict)
                       and isinstance(r.get("run"), dict) and "seed" in r["run"]]
            if not records:
                raise DataFormatError(f"{f}: no progress record of `privrec train` in it")
            inter, _ = seq.data_of(records[0]["config"])
            loaded.append(SR.result_from_progress(records, seq.dataset_summary(inter), source=f))
            continue
        try:
            obj = json.loads(Path(f).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataFormatError(f"{f}: not a results.json ({exc}); pass the results.json written by `privrec train` "
                                  "or its OUT.progress.jsonl") from None
        if not (isinstance(obj, dict) and obj.get("kind") == "sequential" and isinstance(obj.get("runs"), list)
                and isinstance(obj.get("config"), dict) and all(isinstance(r, dict) and "seed" in r for r in obj["runs"])):
            raise DataFormatError(f"{f}: not a results.json of `privrec train` (it needs kind 'sequential', a config and "
                                  "a list of runs with their seeds); pass the results.json written by `privrec train`")
        loaded.append(obj)
    from privrec.cli.options import command_line

    merged = SR.merge_seeds(loaded)
    merged["command"] = command_line()
    save_report(out, merged, SR.markdown(merged), kind="merge")
    click.echo(f"{merged['protocol']}, test split, seeds {merged['config']['seeds']}:")
    click.echo(text_table(["model", "K", "NDCG", "HR", "Recall", "MRR"], SR.summary_rows(merged)))
    click.echo(f"\nreport: {out}/results.md")


@results.command("gates")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Draw each direction's gate differences against the reports' testbeds into this PNG.")
def gates(files: tuple[str, ...], plot: str | None) -> None:
    """The positive-control gates of cross-domain reports (`reproduce pricdsr|pricdr|pfcr`, one results.json per
    testbed), side by side: how the non-private model's gain over its single-domain counterpart and over its
    pure-noise control moves as the target gets sparser (docs/testbeds.md)."""
    from privrec.experiments.gate import gate_rows
    from privrec.experiments.report import text_table

    reports = []
    for f in files:
        try:
            res = json.loads(Path(f).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataFormatError(f"{f}: not a results.json ({exc})") from None
        if not isinstance(res, dict) or not isinstance(res.get("gates"), list):
            raise DataFormatError(f"{f}: no gates in it; pass the results.json of `privrec reproduce pricdsr|pricdr|pfcr`"
                                  " written by this version")
        reports.append(res)
    rows = gate_rows(reports)
    click.echo(text_table(["testbed", "direction", "metric", "positive control", "information control", "gate"],
                          [[r["testbed"], r["where"], r["metric"], r["positive"], r["information"], r["verdict"]]
                           for r in rows]))
    if plot:
        from privrec.experiments.testbed_plot import plot_gates
        from privrec.utils.io import atomic_path

        with atomic_path(plot) as tmp:
            plot_gates(reports, tmp)
        click.echo(f"plot: {plot}")
