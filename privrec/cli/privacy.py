"""``privrec publish``, ``privrec guarantee``, ``privrec audit``: the privacy layer on the command line.

``publish`` reads a dataset name or a file, runs one mechanism with a seed (or an OS-CSPRNG
seed it records), writes OUTPUT in the format its extension names and the certificate to
``OUTPUT.privacy.json``. Parameters are validated before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
import pandas as pd

from privrec.errors import ParameterError

MECHANISMS = ("sdp", "rr", "jlt", "sjlt", "features")


def _certificate_path(output: Path) -> Path:
    return output.with_name(output.name + ".privacy.json")


def _sequences_matrix(inter, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Chronological per-user rows, last ``max_len`` items, front-padded; duplicates dropped."""
    from privrec.data.preprocess import drop_duplicates
    from privrec.data.sequences import to_sequences

    inter = drop_duplicates(inter)
    seqs = to_sequences(inter)
    users = np.flatnonzero(seqs.lengths > 0)
    return seqs.to_padded(max_len, users).astype(np.int64), users


def _rows_frame(rows: np.ndarray, users: np.ndarray, inter) -> pd.DataFrame:
    r, c = np.nonzero(rows)
    return pd.DataFrame({"user_id": inter.users.decode(users[r]), "item_id": inter.items.decode(rows[r, c]),
                         "timestamp": (c + 1).astype(np.float64)})


_ROW_TYPES = {"user_id": "token", "item_id": "token", "timestamp": "float"}


@click.command()
@click.argument("mechanism", type=click.Choice(MECHANISMS))
@click.argument("source")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="Output file: .inter, .csv or .parquet. The certificate goes to OUTPUT.privacy.json.")
@click.option("--epsilon", type=float, required=True, help="Privacy budget (what the mechanism's paper calls ε).")
@click.option("--delta", type=float, default=None, help="δ for (ε,δ) mechanisms (jlt/sjlt; default 1/#users).")
@click.option("--seed", type=int, default=None, help="Seed for reproducible research; default: OS CSPRNG.")
@click.option("--max-len", type=int, default=50, show_default=True, help="sdp/rr: last L items per user.")
@click.option("--n-prime", type=int, default=500, show_default=True, help="jlt/sjlt: output dimension n′.")
@click.option("--q", type=float, default=0.1, show_default=True, help="sjlt: density of the sparse projection.")
@click.option("--calibration", type=click.Choice(["paper", "blocki", "tight"]), default="paper", show_default=True,
              help="jlt/sjlt: how the lift w is chosen from (ε, δ).")
@click.option("--alternatives", type=click.Choice(["injective", "paired", "nearest"]), default="injective",
              show_default=True, help="rr: injective matching over kNN (Thm 3.1 holds), a pair-swapping map (also a "
              "finite per-item epsilon), or the paper's nearest neighbour (not injective: true odds reported).")
@click.option("--embeddings", type=click.Path(exists=True, dir_okay=False), default=None,
              help="rr: .npy item embeddings (row i = item code i+1) instead of MiniLM on the titles.")
@click.option("--allow-invalid", is_flag=True, help="Run settings outside the theorem's validity (reported).")
@click.option("--aux", default=None, help="sdp: publish only this domain of a cross-domain SOURCE (PriCDSR): the "
              "shared users' train rows, never their validation/test items; ml-1m splits by genre (action, drama).")
@click.option("--domain-field", default=None, help="With --aux and a file SOURCE: the column naming each row's domain.")
def publish(mechanism: str, source: str, output: str, epsilon: float, delta: float | None, seed: int | None,
            max_len: int, n_prime: int, q: float, calibration: str, alternatives: str, embeddings: str | None,
            allow_invalid: bool, aux: str | None, domain_field: str | None) -> None:
    """Publish SOURCE (a dataset name such as ml-1m, or an .inter/.csv/.parquet file) through MECHANISM."""
    from privrec.data.tables import load, write_interactions
    from privrec.privacy.guarantee import certificate
    from privrec.privacy.validate import check_delta, check_epsilon, check_positive_int
    from privrec.utils.io import write_json_atomic
    from privrec.utils.repro import resolve_seed

    out = Path(output)
    if out.suffix.lower() not in (".inter", ".csv", ".parquet"):
        raise ParameterError(f"{out}: unsupported output extension {out.suffix!r}; use .inter, .csv or .parquet")
    check_epsilon(epsilon)
    if delta is not None:
        check_delta(delta)
    check_positive_int(max_len, "max_len")
    if aux is not None or domain_field is not None:
        _publish_aux(mechanism, source, out, epsilon, seed, max_len, aux, domain_field)
        return
    info = resolve_seed(seed)
    rng = np.random.default_rng(info.seed)
    inter = load(source)
    types = None
    if mechanism in ("sdp", "rr"):
        rows, users = _sequences_matrix(inter, max_len)
        if mechanism == "sdp":
            from privrec.privacy import sdp

            published, guarantee = sdp.perturb(rows, inter.n_items, epsilon, rng), sdp.guarantee(epsilon, inter.n_items, max_len)
        else:
            from privrec.data.text import item_texts
            from privrec.privacy import alternatives as A
            from privrec.privacy import rr

            emb = np.load(embeddings) if embeddings else A.embed_texts(item_texts(inter))
            amap = {"injective": A.injective_map, "paired": A.paired_map,
                    "nearest": A.nearest_neighbour_map}[alternatives](emb)
            guarantee = rr.guarantee(epsilon, amap, sequences=rows, allow_invalid=allow_invalid)
            published = rr.perturb(rows, amap, epsilon, rng, allow_invalid=allow_invalid)
        frame, types = _rows_frame(published, users, inter), _ROW_TYPES
        desc = {"users": int(len(users)), "max_len": max_len, "format": "user_id, item_id, timestamp = position 1..L"}
    elif mechanism in ("jlt", "sjlt"):
        import scipy.sparse as sp

        from privrec.privacy import jlt

        values = inter.rating if inter.rating is not None else np.ones(len(inter), dtype=np.float32)
        users, ucode = np.unique(inter.user, return_inverse=True)
        ratings = sp.csr_matrix((values.astype(np.float64), (ucode, inter.item - 1)), shape=(len(users), inter.n_items))
        ratings.sum_duplicates()
        check_positive_int(n_prime, "n_prime")
        kw = dict(delta=delta, n_prime=n_prime, calibration=calibration, allow_invalid=allow_invalid,
                  max_change=float(values.max() - min(0.0, float(values.min()))))
        published, guarantee = (jlt.publish_jlt(ratings, epsilon, rng, **kw) if mechanism == "jlt"
                                else jlt.publish_sjlt(ratings, epsilon, rng, q=q, **kw))
        frame = pd.DataFrame(published, columns=[f"p{k}" for k in range(published.shape[1])])
        frame.insert(0, "user_id", inter.users.decode(users))
        desc = {"users": int(len(users)), "items": int(inter.n_items), "n_prime": int(published.shape[1])}
    else:
        from privrec.privacy import features as F

        if inter.user_features is None:
            raise ParameterError(f"{source}: no user features (a .user file with age/gender/occupation) to publish")
        feats = inter.user_features.reindex(range(1, len(inter.users) + 1))
        schema = F.movielens_schema(feats)
        encoded = F.encode_features(feats, schema)
        published, guarantee = F.perturb_features(encoded, schema, epsilon, rng)
        frame = pd.DataFrame(published, columns=[f"x{k}" for k in range(published.shape[1])])
        frame.insert(0, "user_id", inter.users.tokens[1:])
        desc = {"users": int(len(frame)), "schema": repr(schema)}
    write_interactions(frame, out, types)
    cert = certificate(guarantee, info, input_desc={"source": str(source), "mechanism": mechanism},
                       output_desc={"path": str(out), **desc})
    write_json_atomic(_certificate_path(out), cert)
    click.echo(f"wrote {out} ({len(frame):,} rows) and {_certificate_path(out).name}")
    click.echo(guarantee.summary())


def _publish_aux(mechanism: str, source: str, out: Path, epsilon: float, seed: int | None, max_len: int,
                 aux: str | None, domain_field: str | None) -> None:
    """PriCDSR's release: one domain of two-domain data, shared users only, train items only,
    as RecBole atomic files (``.inter`` + ``.user``) with the certificate next to them."""
    from privrec.data.crossdomain import load_cross_domain
    from privrec.experiments.pricdsr import publish as publish_rows
    from privrec.experiments.pricdsr import write_published
    from privrec.privacy.guarantee import certificate
    from privrec.utils.repro import resolve_seed

    if mechanism != "sdp":
        raise ParameterError(f"--aux/--domain-field publish one domain of cross-domain data with sdp (PriCDSR), "
                             f"not {mechanism}")
    if aux is None:
        raise ParameterError("--domain-field needs --aux DOMAIN: the domain whose rows are published")
    if out.suffix.lower() != ".inter":
        raise ParameterError(f"{out}: a cross-domain release is a RecBole dataset (.inter + .user); name the output "
                             "NAME/NAME.inter")
    data = load_cross_domain(source, domain_field)
    if aux not in data.names:
        raise ParameterError(f"--aux {aux!r} is not a domain of {source}; its domains are {list(data.names)}")
    info = resolve_seed(seed)
    rows, guarantee, _ = publish_rows(data, aux, epsilon, max_len, info.seed)
    cert = certificate(guarantee, info,
                       input_desc={"source": str(source), "mechanism": "sdp", "domain": aux, "rows": data.n_users,
                                   "max_len": max_len, "split": "train items only (validation and test items withheld)"},
                       output_desc={"path": str(out), "files": [out.name, out.with_suffix(".user").name],
                                    "format": "RecBole atomic", "interactions": int(np.count_nonzero(rows))})
    write_published(out, rows, data, aux, cert)
    click.echo(f"wrote {out} ({int(np.count_nonzero(rows)):,} interactions of {data.n_users:,} users), "
               f"{out.with_suffix('.user').name} and {_certificate_path(out).name}")
    click.echo(guarantee.summary())


GUARANTEES = ("sdp", "rr", "jlt", "sjlt", "features", "graph", "pfcr-paper", "pfcr-calibrated", "edgerand")


@click.command()
@click.argument("mechanism", type=click.Choice(GUARANTEES))
@click.option("--epsilon", type=float, default=None, help="Privacy parameter of the mechanism.")
@click.option("--delta", type=float, default=1e-5, show_default=True)
@click.option("--n-items", type=int, default=3706, show_default=True, help="sdp/jlt: number of items.")
@click.option("--n-users", type=int, default=6040, show_default=True, help="jlt: number of users.")
@click.option("--max-len", type=int, default=50, show_default=True, help="sdp/rr: row length L.")
@click.option("--n-prime", type=int, default=500, show_default=True)
@click.option("--q", type=float, default=0.1, show_default=True)
@click.option("--calibration", type=click.Choice(["paper", "blocki", "tight"]), default="paper", show_default=True)
@click.option("--buckets", type=int, default=64, show_default=True, help="pfcr: quantisation buckets b.")
@click.option("--coords", type=int, default=1, show_default=True, help="pfcr: gradient coordinates per upload.")
@click.option("--rounds", type=int, default=1, show_default=True, help="pfcr: federated rounds.")
@click.option("--sigma", type=float, default=None, help="graph: noise std (default: calibrated to --epsilon).")
@click.option("--clip", type=float, default=1.0, show_default=True, help="graph: row norm C.")
@click.option("--steps", type=int, default=1, show_default=True, help="graph: propagation steps T per pass.")
@click.option("--passes", type=int, default=100, show_default=True, help="graph: forward passes over a user's graph.")
@click.option("--unit", type=click.Choice(["edge", "interaction"]), default="edge", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the full guarantee as JSON.")
def guarantee(mechanism: str, epsilon: float | None, delta: float, n_items: int, n_users: int, max_len: int,
              n_prime: int, q: float, calibration: str, buckets: int, coords: int, rounds: int, sigma: float | None,
              clip: float, steps: int, passes: int, unit: str, as_json: bool) -> None:
    """What a parameter setting gives, without touching data (true value next to the paper's claim).

    Example: privrec guarantee pfcr-paper --epsilon 0.5 --buckets 64
    """
    defaults = {"sdp": 10.0, "rr": 1.0, "jlt": 1.0, "sjlt": 1.0, "features": 1.0, "graph": 1.0, "pfcr-paper": 0.5,
                "pfcr-calibrated": 0.5, "edgerand": 1.0}
    eps = defaults[mechanism] if epsilon is None else epsilon
    if mechanism == "sdp":
        from privrec.privacy import sdp

        g = sdp.guarantee(eps, n_items, max_len)
    elif mechanism == "rr":
        from privrec.privacy import rr

        g = rr.guarantee(eps, _pairing(n_items), max_len=max_len, allow_invalid=True)
    elif mechanism in ("jlt", "sjlt"):
        from privrec.privacy import jlt

        w = jlt.calibrate_w(eps, delta, n_prime, calibration)
        g = jlt.guarantee(method=mechanism, w=w, delta=delta, n_prime=n_prime, n_users=n_users, n_items=n_items,
                          epsilon=eps, calibration=calibration, **({"q": q} if mechanism == "sjlt" else {}))
    elif mechanism == "features":
        from privrec.privacy import features as F

        g = F.guarantee(F.movielens_schema(), eps)
    elif mechanism == "graph":
        from privrec.privacy import graph as G

        s = sigma if sigma is not None else G.calibrate_sigma(eps, delta, clip, steps, passes, unit)
        g = G.guarantee(s, clip, steps, passes, delta, unit)
    elif mechanism == "edgerand":
        from privrec.privacy import graph as G

        _, _, g = G.edge_rand(np.zeros((1, 2, 2)), eps, delta, np.random.default_rng(0))    # parameters only
    else:
        from privrec.privacy import fedcodec

        g = fedcodec.guarantee(mechanism, eps, buckets, coords, rounds, delta=delta)
    if as_json:
        click.echo(json.dumps(g.to_dict(), indent=2, default=str))
    else:
        click.echo(g.summary())
        for r in g.related:
            click.echo("  also: " + r.summary())


def _pairing(n_items: int) -> np.ndarray:
    """An injective alternative map over codes 1..m: pairs (1 2)(3 4)...; a 3-cycle closes odd m."""
    if n_items < 2:
        raise ParameterError("rr needs at least 2 items")
    alt = np.zeros(n_items + 1, dtype=np.int64)
    codes = np.arange(1, n_items + 1)
    alt[1:] = np.where(codes % 2 == 1, codes + 1, codes - 1)
    if n_items % 2:
        alt[n_items - 2], alt[n_items - 1], alt[n_items] = n_items - 1, n_items, n_items - 2
    return alt


@click.command()
@click.argument("mechanism", type=click.Choice(["sdp", "rr", "jlt", "sjlt", "piecewise", "oue", "features", "graph",
                                                "graph-sigma2-bug", "pfcr-paper", "pfcr-calibrated"]))
@click.option("--epsilon", type=float, default=None, help="The mechanism's claimed ε (default per mechanism).")
@click.option("--samples", type=int, default=50_000, show_default=True, help="Samples per neighbouring input.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def audit(mechanism: str, epsilon: float | None, samples: int, seed: int, as_json: bool) -> None:
    """Empirical lower bound on ε from samples on two neighbouring inputs (Clopper–Pearson, 95%)."""
    from privrec.privacy.catalogue import run_audit

    result, case = run_audit(mechanism, epsilon, samples, seed)
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "true_epsilon": case.get("true_epsilon")}, indent=2, default=str))
    else:
        click.echo(result.summary())
        if case.get("true_epsilon") is not None:
            click.echo(f"true epsilon of this setting: {case['true_epsilon']:.4g}")
