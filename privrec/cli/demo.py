"""``privrec demo``: the README's main job (``privrec reproduce pricdsr --quick``)."""

from __future__ import annotations

import click


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="reports/pricdsr-quick", show_default=True,
              help="Report folder (reproduce pricdsr --quick's own: running both trains once).")
def demo(out: str) -> None:
    """Fetch ML-1M, publish the auxiliary domain under SDP, train DASL-single / DASL /
    PriCDSR-DASL briefly, print the tables and write a report folder (quick, < 10 min)."""
    from privrec.cli.reproduce import run_pricdsr

    run_pricdsr(quick=True, out=out)
