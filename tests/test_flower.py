"""PFCR on Flower: the client's round as plain functions, the upload wire format, FedProx's local term,
and the real runtimes — one simulation and one deployment (SuperLink + SuperNodes as processes on
127.0.0.1) — which must compute the same federation as a plain loop over the same functions."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from privrec.data.sequences import Sequences
from privrec.errors import ParameterError
from privrec.flower import client as C
from privrec.flower.bundle import FederationConfig, load_bundle, write_bundle
from privrec.training.federated import CodecConfig, server_aggregate
from privrec.training.trainer import TrainConfig

MODEL = {"hidden": 8, "heads": 2, "layers": 1, "n_codebooks": 2, "n_centroids": 4}


def _domain(n_items: int, n_users: int, offset: int, seed: int):
    rng = np.random.default_rng(seed)
    rows = [[]] + [list(rng.integers(1, n_items + 1, 8)) for _ in range(n_users)]
    codes = np.vstack([[-1, -1]] + [[(i + offset) % 4, (2 * i) % 4] for i in range(1, n_items + 1)])
    return Sequences.from_rows(rows), codes


def _bundle(path, mode="calibrated", rounds=2, strategy="fedavg", mu=0.0, share=0.5):
    cfg = FederationConfig(rounds=rounds, codec=CodecConfig(mode=mode, epsilon=1.0, buckets=16, clip=0.05), max_len=5,
                           model=MODEL, strategy=strategy, proximal_mu=mu, popular_share=share,
                           train=TrainConfig(batch_size=8, lr=1e-2, progress=False))
    (a, ca), (b, cb) = _domain(12, 20, 0, 1), _domain(9, 15, 1, 2)
    return write_bundle(path, [("a", a, ca), ("b", b, cb)], cfg)


def plain_loop(b) -> list[np.ndarray]:
    """The federation without Flower: every client's round, decoded and aggregated, round by round."""
    from privrec.flower.server import ServerState, aggregate

    state, tables = ServerState(b.table0().astype(np.float64)), []
    for r in range(1, b.config.rounds + 1):
        table = state.table.astype(np.float32)
        control = None if state.control is None else state.control.astype(np.float32)
        ups = [C.train_round(b, k, r, table, control) for k in range(b.n_domains)]
        packed = [C.unpack(C.pack(u[0]), b.config.codec, table.shape) for u in ups]   # through the wire format
        state = aggregate(b, ServerState(table.astype(np.float64), state.controls), packed, [u[1] for u in ups],
                          [u[3] for u in ups])
        tables.append(state.table.astype(np.float32))
    return tables


def plain_federation(bundle, log=print) -> dict:
    """What :func:`privrec.flower.run.simulate` returns, computed by :func:`plain_loop` (equal by
    ``test_simulation_and_deployment_run_the_plain_loops_federation``), for fast pipeline tests."""
    b = load_bundle(str(bundle))
    tables, rounds = plain_loop(b), []
    for t, table in enumerate(tables, 1):
        b.state.mkdir(exist_ok=True)
        np.save(b.global_table(t), table)
        per = [C.evaluate_round(b, k, t, table)[0] for k in range(b.n_domains)]
        rounds.append({"round": t, "valid": per, "valid_mean": {m: float(np.mean([p[m] for p in per])) for m in per[0]}})
    best = max(rounds, key=lambda r: r["valid_mean"]["hr@10"])["round"]
    res = {"rounds": rounds, "best_round": best, "select": "hr@10", "n_domains": b.n_domains, "names": list(b.names)}
    (b.state / "result.json").write_text(json.dumps(res))
    return res


@pytest.mark.parametrize("mode,strategy", [("none", "fedavg"), ("paper", "fedavg"), ("calibrated", "fedavg"),
                                           ("paper", "scaffold"), ("calibrated", "popcode")])
def test_a_clients_rounds_are_deterministic_and_restartable(tmp_path, mode, strategy):
    b = _bundle(tmp_path / "b", mode, strategy=strategy)
    first = plain_loop(b)
    again = plain_loop(load_bundle(str(b.path)))            # rounds restart from the saved checkpoints
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], b.table0())
    metrics, users = C.evaluate_round(b, 0, 2, first[1])
    assert users == 20 and 0 <= metrics["ndcg@10"] <= metrics["hr@10"] <= 1


def test_wire_format_round_trips_every_codec():
    from privrec.training.federated import encode

    rng = np.random.default_rng(0)
    delta = rng.normal(0, 0.02, size=(8, 3))
    for mode in ("none", "paper", "calibrated"):
        codec = CodecConfig(mode=mode, epsilon=2.0, buckets=64, clip=0.05)
        up = encode(delta, codec, np.random.default_rng(1))
        wire = C.pack(up)
        assert all(isinstance(a, np.ndarray) for a in wire.values())
        back = C.unpack(wire, codec, delta.shape)
        a = server_aggregate(np.zeros(delta.shape), [up], [1], codec)
        b = server_aggregate(np.zeros(delta.shape), [back], [1], codec)
        np.testing.assert_allclose(a, b)
    assert C.pack(encode(delta, CodecConfig(mode="paper", buckets=64), rng))["upload"].dtype == np.uint16


def test_fedprox_term_pulls_the_table_towards_the_global_one(tmp_path):
    b = _bundle(tmp_path / "p", "none", strategy="fedprox", mu=5.0)
    model, trainer, prox = C.client(b, 0, 0)
    prox.anchor = torch.zeros_like(model.item_embedding.table.weight)
    pen = prox.penalty(trainer)
    assert pen.item() == pytest.approx(2.5 * model.item_embedding.table.weight.pow(2).sum().item(), rel=1e-5)
    plain = plain_loop(_bundle(tmp_path / "q", "none"))[0]
    prox_t = plain_loop(b)[0]
    assert np.linalg.norm(prox_t - b.table0()) < np.linalg.norm(plain - b.table0())


def test_scaffold_controls_match_on_both_sides_and_correct_the_drift(tmp_path):
    from privrec.flower.server import ServerState, aggregate
    from privrec.training.fl_strategies import scaffold_control

    # option II by hand: c_i+ = c_i - c + (x - y_i)/(K lr)
    np.testing.assert_allclose(scaffold_control(np.ones(3), np.full(3, 0.5), np.array([0.2, 0.0, -0.4]), 4, 0.1),
                               [1 - 0.5 - 0.5, 0.5, 1 - 0.5 + 1.0])
    b = _bundle(tmp_path / "s", "none", rounds=2, strategy="scaffold")
    plain = plain_loop(b)
    assert not np.allclose(plain[1], plain_loop(_bundle(tmp_path / "f", "none"))[1])   # round 2 is corrected
    # what each client stored as its c_i equals what the server derived from its (decoded) upload
    state = ServerState(b.table0().astype(np.float64))
    ups = [C.train_round(b, k, 1, b.table0()) for k in range(2)]
    state = aggregate(b, state, [u[0] for u in ups], [u[1] for u in ups], [u[3] for u in ups])
    for k in range(2):
        _, _, hook = C.client(b, k, 1)
        np.testing.assert_allclose(hook.client.numpy(), state.controls[k], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.control, (state.controls[0] + state.controls[1]) / 2)
    assert ups[0][3] == 3                                       # 20 users' windows in batches of 8
    # the correction moves the table by lr (c - c_i) per step
    model, trainer, hook = C.client(b, 0, 1)
    hook.server = torch.zeros_like(hook.client)
    before = model.item_embedding.table.weight.detach().clone()
    hook.on_batch_end(trainer, {}, 0.0)
    np.testing.assert_allclose(model.item_embedding.table.weight.detach() - before, b.config.train.lr * hook.client,
                               rtol=1e-4, atol=1e-7)


def test_popcode_federates_only_the_popular_rows(tmp_path):
    from privrec.training.fl_strategies import popular_rows

    codes = [np.array([[-1, -1], [0, 1], [0, 2], [1, 2]]), np.array([[-1, -1], [0, 3], [2, 2]])]
    # counts: codebook 0 -> {0: 3, 1: 1, 2: 1}; codebook 1 -> {1: 1, 2: 3, 3: 1}; 4 centroids each
    np.testing.assert_array_equal(popular_rows(codes, 4, 0.25), [1, 0, 0, 0, 0, 0, 1, 0])
    assert popular_rows(codes, 4, 1.0).sum() == 6                   # unused codes are never "popular"
    with pytest.raises(ParameterError, match="popular_share"):
        popular_rows(codes, 4, 0.0)
    b = _bundle(tmp_path / "p", "calibrated", rounds=2, strategy="popcode", share=0.25)
    rows = b.popular
    assert 0 < rows.sum() < rows.size
    tables = plain_loop(b)
    np.testing.assert_array_equal(tables[1][~rows], b.table0()[~rows])     # the server keeps them as they were
    assert not np.allclose(tables[1][rows], b.table0()[rows])
    # a client's table: global popular rows, its own others
    model, _, _ = C.client(b, 0, 2)
    own = model.item_embedding.table.weight.detach().numpy()
    mixed = C.client_table(b, own, tables[1])
    np.testing.assert_array_equal(mixed[rows], tables[1][rows])
    np.testing.assert_array_equal(mixed[~rows], own[~rows])
    assert not np.allclose(own[~rows], b.table0()[~rows])                 # they trained locally


def test_bad_federation_settings_are_refused(tmp_path):
    from privrec.flower.run import check_loopback

    with pytest.raises(ParameterError, match="rounds"):
        FederationConfig(rounds=0)
    with pytest.raises(ParameterError, match="proximal_mu"):
        FederationConfig(strategy="fedprox")
    with pytest.raises(ParameterError, match="buckets"):
        CodecConfig(mode="paper", buckets=1)
    with pytest.raises(ParameterError, match="clip"):
        CodecConfig(mode="paper", clip=0.0)
    empty = Sequences.from_rows([[], []])
    _, codes = _domain(12, 20, 0, 1)
    seqs, _ = _domain(12, 20, 0, 1)
    with pytest.raises(ParameterError, match="no interactions"):
        write_bundle(tmp_path / "e", [("a", seqs, codes), ("b", empty, codes)], FederationConfig(model=MODEL))
    assert not (tmp_path / "e").exists()
    with pytest.raises(ParameterError, match="loopback"):
        check_loopback("10.0.0.7:9092")
    with pytest.raises(ParameterError, match="federation bundle"):
        load_bundle(str(tmp_path))


def test_only_the_run_simulation_deprecation_is_dropped_from_flowers_log():
    import logging

    from flwr.supercore.logger import warn_deprecated_feature

    from privrec.flower.run import quiet_flower_logs

    quiet_flower_logs()
    quiet_flower_logs()                       # idempotent: one filter
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log = logging.getLogger("flwr")
    log.addHandler(handler)
    try:
        warn_deprecated_feature("The `run_simulation` function is deprecated and will be removed")
        warn_deprecated_feature("something else")
    finally:
        log.removeHandler(handler)
    assert len(seen) == 1 and "something else" in seen[0]
    assert sum(type(f).__name__ == "_DropRunSimulationDeprecation" for f in log.filters) == 1


@pytest.mark.integration
def test_simulation_and_deployment_run_the_plain_loops_federation(tmp_path):
    """Flower's simulation engine and a real SuperLink + 2 SuperNodes (processes on 127.0.0.1), 2 rounds
    each, give the plain loop's global tables (same seed, same functions)."""
    from privrec.flower.run import deploy, simulate

    b = _bundle(tmp_path / "plain")
    expected = plain_loop(b)
    for runner_ in (simulate, deploy):
        run = _bundle(tmp_path / runner_.__name__)
        res = runner_(run.path, log=lambda m: None)
        assert [r["round"] for r in res["rounds"]] == [1, 2] and res["best_round"] in (1, 2)
        for t in (1, 2):
            np.testing.assert_allclose(np.load(run.global_table(t)), expected[t - 1], rtol=1e-5, atol=1e-6)
        assert json.loads((run.state / "result.json").read_text()) == res
        assert all(len(r["upload_bytes"]) == 2 and min(r["upload_bytes"]) > 0 for r in res["rounds"])
        if runner_ is deploy:                      # secured by default: TLS from the run's CA, registered keys
            home = (run.path / "deploy" / "flwr-home" / "config.toml").read_text()
            assert "root-certificates" in home and "insecure" not in home
            assert (run.path / "deploy" / "credentials" / "supernode-1.pub").is_file()
    # SCAFFOLD's server control travels beside the table through Flower's messages (the simulation engine)
    expected = plain_loop(_bundle(tmp_path / "plain-scaffold", "paper", strategy="scaffold"))
    run = _bundle(tmp_path / "simulate-scaffold", "paper", strategy="scaffold")
    simulate(run.path, log=lambda m: None)
    for t in (1, 2):
        np.testing.assert_allclose(np.load(run.global_table(t)), expected[t - 1], rtol=1e-5, atol=1e-6)


def test_credentials_are_a_ca_a_server_certificate_for_its_hosts_and_one_key_pair_per_supernode(tmp_path):
    from cryptography import x509

    from privrec.errors import ParameterError
    from privrec.flower.security import make_credentials

    c = make_credentials(tmp_path / "c", ["127.0.0.1", "link.example.org"], 2)
    cert = x509.load_pem_x509_certificate(c.certificate.read_bytes())
    ca = x509.load_pem_x509_certificate(c.ca.read_bytes())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.get_values_for_type(x509.DNSName) == ["link.example.org"]
    assert c.node_public(1).read_text().startswith("ecdsa-sha2-nistp384 ")
    for private in (c.key, c.node_key(0), c.node_key(1), c.folder / "ca.key"):
        assert private.stat().st_mode & 0o077 == 0, private           # owner-only
    with pytest.raises(ParameterError, match="not empty; credentials are made once"):
        make_credentials(c.folder, ["127.0.0.1"], 2)


@pytest.mark.integration
def test_a_supernode_with_an_unregistered_key_or_another_ca_is_refused(tmp_path):
    """SuperNode authentication admits registered keys only; TLS admits a SuperLink whose certificate the
    SuperNode's CA signed: each refusal ends the deployment at once with the reason and the fix."""
    import shutil

    from privrec.flower.run import deploy
    from privrec.flower.security import Credentials, make_credentials, node_keys

    good = make_credentials(tmp_path / "good", ["127.0.0.1", "localhost"], 2)
    other = make_credentials(tmp_path / "other", ["127.0.0.1"], 2)
    unknown, wrong_ca = tmp_path / "unknown", tmp_path / "wrong-ca"
    unknown.mkdir()
    wrong_ca.mkdir()
    shutil.copy(good.ca, unknown / "ca.crt")                 # trusts the SuperLink, holds keys nobody registered
    for k in range(2):
        node_keys(unknown, k)
        shutil.copy(good.node_key(k), wrong_ca / f"supernode-{k}")     # registered keys, another CA
    shutil.copy(other.ca, wrong_ca / "ca.crt")
    for nodes, reason in ((unknown, "the SuperLink refused its key \\(not registered\\): register its public key"),
                          (wrong_ca, "it does not trust the SuperLink's TLS certificate")):
        b = _bundle(tmp_path / f"run-{nodes.name}")
        with pytest.raises(RuntimeError, match=f"SuperNode 0 could not join the SuperLink: {reason}"):
            deploy(b.path, log=lambda m: None, credentials=good, node_credentials=Credentials(nodes),
                   connect_timeout=60)
        assert not (b.state / "result.json").exists()


@pytest.mark.integration
def test_flwr_run_dot_runs_the_federation_as_flower_users_expect(tmp_path):
    """``flwr run .`` from the repository (pyproject's [tool.flwr.app]) on a bundle gives the plain loop's tables."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as s:                       # Flower's local SuperLink has a fixed port
        if s.connect_ex(("127.0.0.1", 39091)) == 0:
            pytest.skip("a local Flower SuperLink already listens on 127.0.0.1:39091 (flwr run . would use it)")
    root = Path(__file__).resolve().parents[1]
    b = _bundle(tmp_path / "b")
    expected = plain_loop(_bundle(tmp_path / "plain"))
    bindir = Path(sys.executable).parent
    home = tmp_path / "home"
    env = {**os.environ, "FLWR_HOME": str(home), "FLWR_TELEMETRY_ENABLED": "0",
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        done = subprocess.run([str(bindir / "flwr"), "run", ".", "--run-config", f"bundle='{b.path}'",
                               "--federation-config", "num-supernodes=2", "--stream"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600)
    finally:                                         # flwr leaves its local SuperLink running: stop ours
        for pid in (int(p) for p in (os.listdir("/proc") if os.path.isdir("/proc") else ()) if p.isdigit()):
            try:
                if f"FLWR_HOME={home}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                    os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    for t in (1, 2):
        np.testing.assert_allclose(np.load(b.global_table(t)), expected[t - 1], rtol=1e-5, atol=1e-6)
