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
    """Merge `privrec train` results.json FILES of one configuration (different seeds) into one
    report with mean ± std over all seeds."""
    from privrec.experiments import sequential_report as SR
    from privrec.experiments.report import text_table, write_report

    loaded = []
    for f in files:
        try:
            loaded.append(json.loads(Path(f).read_text(encoding="utf-8")))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataFormatError(f"{f}: not a results.json ({exc}); pass the results.json written by `privrec train`") from None
    merged = SR.merge_seeds(loaded)
    write_report(out, merged, SR.markdown(merged))
    click.echo(f"{merged['protocol']}, test split, seeds {merged['config']['seeds']}:")
    click.echo(text_table(["model", "K", "NDCG", "HR", "Recall", "MRR"], SR.summary_rows(merged)))
    click.echo(f"\nreport: {out}/results.md")
