"""``privrec publish``, ``privrec guarantee``, ``privrec audit``: the privacy layer on the command line.

``publish`` reads a dataset name or a file, runs one mechanism and writes a *release folder*:
the data and ``certificate.json`` (guarantee, input, SHA-256 of every file), renamed into place
once (:mod:`privrec.release`). Parameters and paths are checked before anything is read.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from privrec.cli.fields import field_options, fields_of
from privrec.errors import ParameterError
from privrec.privacy.registry import AUDITS, MECHANISMS, PUBLISHABLE


def _sequence_rows(inter, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Chronological per-user rows, last ``max_len`` items, front-padded; duplicates dropped.
    Returns (rows, user codes)."""
    from privrec.data.preprocess import drop_duplicates
    from privrec.data.sequences import to_sequences
    from privrec.utils.resources import check_allocation

    seqs = to_sequences(drop_duplicates(inter))
    users = np.flatnonzero(seqs.lengths > 0)
    check_allocation(16.0 * len(users) * max_len, f"--max-len {max_len} over {len(users):,} users",
                     f"choose a smaller --max-len (the longest history here is {int(seqs.lengths.max()):,} items)")
    return seqs.to_padded(max_len, users).astype(np.int64), users


@click.command()
@click.argument("mechanism", type=click.Choice(PUBLISHABLE))
@click.argument("source")
@click.option("-o", "--output", type=click.Path(), required=True,
              help="Release folder: the data and certificate.json are written into it as one unit.")
@click.option("--format", "fmt", type=click.Choice(["inter", "csv", "parquet"]), default=None,
              help="Data format (default: inter for sequences, parquet for matrices and features).")
@click.option("--epsilon", type=float, required=True, help="Privacy budget (what the mechanism's paper calls ε).")
@click.option("--delta", type=float, default=None,
              help="δ of jlt/sjlt (default 1/(10·#users); δ >= 1/#users is refused without --allow-large-delta).")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed for reproducible research (not written to the certificate); default: OS CSPRNG.")
@click.option("--record-seed", is_flag=True, help="Write the seed into the certificate (research only: with it "
              "anyone holding the release can undo the noise).")
@click.option("--max-len", type=click.IntRange(min=1), default=50, show_default=True,
              help="sdp/rr: last L items per user.")
@click.option("--n-prime", type=click.IntRange(min=1), default=500, show_default=True,
              help="jlt/sjlt: output dimension n′.")
@click.option("--q", type=float, default=0.1, show_default=True, help="sjlt: density of the sparse projection.")
@click.option("--calibration", type=click.Choice(["paper", "blocki", "tight"]), default="paper", show_default=True,
              help="jlt/sjlt: how the lift w is chosen from (ε, δ).")
@click.option("--alternatives", type=click.Choice(["injective", "paired", "nearest"]), default="injective",
              show_default=True, help="rr: injective matching over kNN (Thm 3.1 holds), a pair-swapping map (also a "
              "finite per-item epsilon), or the paper's nearest neighbour (not injective: true odds reported).")
@click.option("--embeddings", type=click.Path(exists=True, dir_okay=False), default=None,
              help="rr: .npy item embeddings (row i = item code i+1) instead of MiniLM on the titles.")
@click.option("--allow-invalid", is_flag=True,
              help="Run settings outside the theorem's validity or with infinite ε (the certificate says so).")
@click.option("--allow-large-delta", is_flag=True, help="jlt/sjlt: accept δ >= 1/#users (reported).")
@click.option("--aux", default=None, help="Publish only this domain of a cross-domain SOURCE, shared users only; ml-1m "
              "splits by genre (action, drama). sdp (PriCDSR): the train rows, never validation/test items; jlt/sjlt "
              "(PriCDR): the domain's whole users x items 0/1 matrix.")
@click.option("--domain-field", default=None, help="With --aux and a file SOURCE: the column naming each row's domain.")
@field_options
def publish(mechanism: str, source: str, output: str, fmt: str | None, epsilon: float, delta: float | None,
            seed: int | None, record_seed: bool, max_len: int, n_prime: int, q: float, calibration: str,
            alternatives: str, embeddings: str | None, allow_invalid: bool, allow_large_delta: bool, aux: str | None,
            domain_field: str | None, **field_kw) -> None:
    """Publish SOURCE (a dataset name such as ml-1m, or an .inter/.csv/.parquet file) through MECHANISM
    into the release folder OUTPUT (data + certificate.json)."""
    from privrec.data.tables import load
    from privrec.privacy.validate import check_delta, check_epsilon
    from privrec.release import publish as P
    from privrec.release import tables as T
    from privrec.release.certificate import certificate
    from privrec.release.folder import check_replaceable, release_folder, write_release
    from privrec.release.paths import check_output, input_files
    from privrec.utils.repro import resolve_seed

    folder = release_folder(output)
    check_epsilon(epsilon)
    if delta is not None:
        check_delta(delta)
        if "delta" not in MECHANISMS[mechanism].options:
            raise ParameterError(f"--delta is not a parameter of {mechanism} (a pure epsilon guarantee, delta = 0); "
                                 "drop it")
    fields = fields_of(**field_kw)
    if aux is not None or domain_field is not None:
        _publish_aux(mechanism, source, folder, fmt or "inter", epsilon, seed, record_seed, max_len, aux, domain_field,
                     dict(n_prime=n_prime, q=q, calibration=calibration, delta=delta, allow_invalid=allow_invalid,
                          allow_large_delta=allow_large_delta), fields)
        return
    check_output(folder, input_files(source) + ([Path(embeddings)] if embeddings else []), "-o")
    check_replaceable(folder, "release")
    kind = MECHANISMS[mechanism].publishes
    fmt = fmt or ("inter" if kind == "sequences" else "parquet")
    info = resolve_seed(seed)
    rng = np.random.default_rng(info.seed)
    inter = load(source, fields=fields)
    name = folder.name
    if kind == "sequences":
        rows, users = _sequence_rows(inter, max_len)
        alt = None
        if "alt_map" in MECHANISMS[mechanism].options:      # randomised response: semantic alternatives
            from privrec.experiments.rr_release import item_embeddings
            from privrec.privacy import alternatives as A

            # titles (MiniLM) where the items have them, else attribute ids; neither: refused (rr_release.semantics)
            emb = _load_embeddings(embeddings, inter.n_items) if embeddings else item_embeddings(inter)
            alt = {"injective": A.injective_map, "paired": A.paired_map,
                   "nearest": A.nearest_neighbour_map}[alternatives](emb)
        published, g = P.perturb_sequences(rows, inter.n_items, mechanism, epsilon, rng, alt_map=alt,
                                           allow_invalid=allow_invalid)
        desc = {"users": int(len(users)), "max_len": max_len}

        def write(tmp: Path) -> None:
            T.write_sequences(tmp, name, published, inter.users.decode(users), inter.items.tokens, fmt)
    elif kind == "rating-matrix":
        import scipy.sparse as sp

        values = inter.rating if inter.rating is not None else np.ones(len(inter), dtype=np.float32)
        users, ucode = np.unique(inter.user, return_inverse=True)
        ratings = sp.csr_matrix((values.astype(np.float64), (ucode, inter.item - 1)), shape=(len(users), inter.n_items))
        ratings.sum_duplicates()
        max_change = float(values.max() - min(0.0, float(values.min())))
        published, g = P.project_ratings(ratings, mechanism, epsilon, rng, delta=delta, n_prime=n_prime, q=q,
                                         calibration=calibration, max_change=max_change, allow_invalid=allow_invalid,
                                         allow_large_delta=allow_large_delta)
        desc = {"users": int(len(users)), "items": int(inter.n_items), "n_prime": int(published.shape[1])}

        def write(tmp: Path) -> None:
            T.write_matrix(tmp, name, published, inter.users.decode(users), "p", fmt)
    else:
        if inter.user_features is None:
            raise ParameterError(f"{source}: no user features (a .user file with age/gender/occupation) to publish")
        feats = inter.user_features.reindex(range(1, len(inter.users) + 1))
        published, g, schema = P.perturb_user_features(feats, epsilon, rng)
        desc = {"users": int(len(feats)), "schema": repr(schema)}

        def write(tmp: Path) -> None:
            T.write_matrix(tmp, name, published, inter.users.tokens[1:], "x", fmt)
    cert = certificate(g, info, kind=kind, record_seed=record_seed,
                       input_desc={"source": str(source), "mechanism": mechanism, **desc})
    release = write_release(folder, write, cert)
    click.echo(f"wrote release {folder}/ ({', '.join(release.files)} + certificate.json)")
    click.echo(g.summary())


def _load_embeddings(path: str, n_items: int) -> np.ndarray:
    try:
        emb = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"--embeddings {path}: not a readable .npy array ({exc})") from None
    if emb.ndim != 2 or emb.shape[0] != n_items:
        raise ParameterError(f"--embeddings {path}: shape {emb.shape}, expected ({n_items}, d): one row per item "
                             "code 1..n of the source, in code order")
    return emb


def _publish_aux(mechanism: str, source: str, folder: Path, fmt: str, epsilon: float, seed: int | None,
                 record_seed: bool, max_len: int, aux: str | None, domain_field: str | None, matrix: dict,
                 fields: dict | None = None) -> None:
    """One domain of two-domain data, shared users only: PriCDSR's train rows (sdp) or PriCDR's
    rating matrix (jlt, sjlt)."""
    from privrec.data.crossdomain import load_cross_domain
    from privrec.release.crossdomain import publish_domain_matrix, publish_domain_rows
    from privrec.release.folder import check_replaceable
    from privrec.release.paths import check_output, input_files

    if "aux" not in MECHANISMS[mechanism].options:
        able = [n for n, m in MECHANISMS.items() if "aux" in m.options]
        raise ParameterError(f"--aux/--domain-field publish one domain of cross-domain data with one of "
                             f"{', '.join(able)}, not {mechanism}")
    if aux is None:
        raise ParameterError("--domain-field needs --aux DOMAIN: the domain whose rows are published")
    check_output(folder, input_files(source), "-o")
    check_replaceable(folder, "release")
    data = load_cross_domain(source, domain_field, fields=fields)
    if aux not in data.names:
        raise ParameterError(f"--aux {aux!r} is not a domain of {source}; its domains are {list(data.names)}")
    if MECHANISMS[mechanism].publishes == "rating-matrix":
        release, g = publish_domain_matrix(folder, data, aux, mechanism, epsilon, seed, record_seed=record_seed,
                                           source=str(source), **matrix)
        click.echo(f"wrote release {folder}/ ({', '.join(release.files)} + certificate.json): {data.n_users:,} users "
                   f"x {release.certificate['input']['n_prime']} columns from "
                   f"{release.certificate['input']['interactions']:,} interactions")
        click.echo(g.summary())
        return
    release, g = publish_domain_rows(folder, data, aux, mechanism, epsilon, max_len, seed, record_seed=record_seed,
                                     fmt=fmt, source=str(source))
    click.echo(f"wrote release {folder}/ ({', '.join(release.files)} + certificate.json): "
               f"{release.certificate['input']['interactions']:,} interactions of {data.n_users:,} users")
    click.echo(g.summary())


@click.command()
@click.argument("mechanism", type=click.Choice(list(MECHANISMS)), required=False)
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Instead of a MECHANISM: the privacy ledger of a trained model (what its noisy passes so far cost).")
@click.option("--epsilon", type=float, default=None, help="Privacy parameter of the mechanism.")
@click.option("--delta", type=float, default=1e-5, show_default=True)
@click.option("--n-items", type=click.IntRange(min=1), default=3706, show_default=True, help="sdp/rr/jlt: items.")
@click.option("--n-users", type=click.IntRange(min=1), default=6040, show_default=True, help="jlt: number of users.")
@click.option("--max-len", type=click.IntRange(min=1), default=50, show_default=True, help="sdp/rr: row length L.")
@click.option("--n-prime", type=click.IntRange(min=1), default=500, show_default=True)
@click.option("--q", type=float, default=0.1, show_default=True)
@click.option("--calibration", type=click.Choice(["paper", "blocki", "tight"]), default="paper", show_default=True)
@click.option("--buckets", type=int, default=64, show_default=True, help="pfcr: quantisation buckets b.")
@click.option("--coords", type=click.IntRange(min=1), default=1, show_default=True,
              help="pfcr: gradient coordinates per upload.")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True, help="pfcr: federated rounds.")
@click.option("--sigma", type=float, default=None, help="graph: noise std (default: calibrated to --epsilon).")
@click.option("--clip", type=float, default=1.0, show_default=True, help="graph: row norm C.")
@click.option("--steps", type=click.IntRange(min=1), default=1, show_default=True,
              help="graph: propagation steps T per pass.")
@click.option("--passes", type=click.IntRange(min=1), default=100, show_default=True,
              help="graph: forward passes over a user's graph.")
@click.option("--unit", type=click.Choice(["edge", "interaction"]), default="edge", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the full guarantee as JSON.")
def guarantee(mechanism: str | None, checkpoint: str | None, epsilon: float | None, as_json: bool, **params) -> None:
    """What a parameter setting gives, without touching data (true value next to the paper's claim); or, with
    --checkpoint, what a trained model's noisy passes have cost so far (its privacy ledger).

    Examples: privrec guarantee pfcr-paper --epsilon 0.5 --buckets 64;
    privrec guarantee --checkpoint runs/dipsgnn-seed0.pt
    """
    from privrec.privacy.registry import guarantee_of
    from privrec.release.publish import numerically_safe

    if (mechanism is None) == (checkpoint is None):
        raise ParameterError("give a MECHANISM (what a setting gives) or --checkpoint PATH (a model's ledger), not "
                             "both or neither")
    if checkpoint is not None:
        _ledger(checkpoint, as_json)
        return
    g = numerically_safe(mechanism, lambda: guarantee_of(mechanism, epsilon, **params))
    noise = [v for k, v in g.parameters.items() if k in ("w", "sigma", "noise_std") and isinstance(v, float)]
    if (epsilon is not None and epsilon > 0 and g.epsilon == 0) or any(not np.isfinite(v) for v in noise):
        raise ParameterError(f"{mechanism}: epsilon = {epsilon:g} needs noise beyond floating point (the result "
                             "would read epsilon = 0 over an all-infinite release); choose a less extreme epsilon")
    if as_json:
        click.echo(json.dumps(g.to_dict(), indent=2, default=str))
    else:
        click.echo(g.summary())
        for r in g.related:
            click.echo("  also: " + r.summary())


def _ledger(checkpoint: str, as_json: bool) -> None:
    """``privrec guarantee --checkpoint``: the model's certificate from its ledger, and the ledger itself."""
    from privrec.inference import TrainedModel

    trained = TrainedModel.load(checkpoint)
    g = trained.guarantee()
    if g is None:
        click.echo(f"{checkpoint}: {trained.model.name} draws no noise when it is trained or used, so its checkpoint "
                   "carries no privacy ledger (see the report of the run that trained it for any release it read)")
        return
    if as_json:
        click.echo(json.dumps(g.to_dict(), indent=2, default=str))
        return
    led = g.parameters["ledger"]
    click.echo(g.summary())
    for r in g.related:
        click.echo("  also: " + r.summary())
    click.echo(f"ledger: {led['mechanism']}, {led['charges']:,} charges over {led['units_charged']:,} units "
               f"({led['unit']}); the most-charged unit: {led['worst_unit_charges']:,} noisy steps = "
               f"{g.parameters['passes']:,} passes of T = {g.parameters['T']}"
               + ("" if g.parameters.get("ledger_complete", True) else
                  "; this checkpoint predates the ledger: passes before it are not counted"))


@click.command()
@click.argument("mechanism", type=click.Choice(AUDITS))
@click.option("--epsilon", type=float, default=None, help="The mechanism's claimed ε (default per mechanism).")
@click.option("--samples", type=int, default=50_000, show_default=True, help="Samples per neighbouring input.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
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
