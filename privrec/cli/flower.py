"""``privrec flower credentials``: what a secured PFCR federation on real hosts needs (docs/pfcr.md)."""

from __future__ import annotations

import click


@click.group()
def flower() -> None:
    """Run PFCR's federation on real hosts with Flower (TLS, authenticated SuperNodes)."""


@flower.command("credentials")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--host", "hosts", multiple=True, required=True,
              help="A name or address the SuperLink is reached at (its TLS certificate is valid for these). Repeatable.")
@click.option("--nodes", type=click.IntRange(min=1), required=True, help="SuperNodes (one per organisation).")
def credentials(folder: str, hosts: tuple[str, ...], nodes: int) -> None:
    """Make a federation's credentials in FOLDER (new or empty): a CA (ca.crt, ca.key), the SuperLink's TLS
    certificate for --host (superlink.crt, superlink.key) and one SuperNode key pair per organisation
    (supernode-K, supernode-K.pub). Private keys are owner-only; give each organisation ca.crt and its own
    supernode-K, register every supernode-K.pub on the SuperLink."""
    from privrec.flower.security import make_credentials

    c = make_credentials(folder, list(hosts), nodes)
    click.echo(f"credentials in {c.folder}: ca.crt, superlink.crt/.key for {', '.join(hosts)}, "
               f"{nodes} SuperNode key pairs (supernode-0 … supernode-{nodes - 1}); next: docs/pfcr.md, 'On real hosts'")
