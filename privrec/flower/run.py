"""Running a PFCR federation: Flower's simulation engine, or SuperLink + SuperNodes as processes.

* :func:`simulate` — ``flwr.simulation.run_simulation`` with one virtual SuperNode per domain (Ray
  backend, one CPU per client); the default of ``privrec reproduce pfcr``. Flower 1.42 marks
  ``run_simulation`` deprecated in favour of ``flwr run`` against a ``:local:`` connection; that path
  starts a *detached*, persistent local SuperLink under ``FLWR_HOME`` and returns before the run
  ends, so a library call would have to poll it and tear it down. privrec keeps the in-process
  engine (blocking, nothing left running, same ``ClientApp``/``ServerApp``), pinned by the lock,
  and drops that one warning from the log; ``flwr run`` is exercised by :func:`deploy`.
* :func:`deploy` — the deployment runtime on this machine: ``flower-superlink`` and one
  ``flower-supernode --node-config "partition-id=K num-partitions=N"`` per domain as separate
  processes talking gRPC on 127.0.0.1, the app submitted with ``flwr run`` to the SuperLink's
  control API; every process is stopped afterwards. Across organisations the same commands run on
  each organisation's machine, with TLS certificates instead of ``--insecure`` (docs/pfcr.md).

Both return the server's ``state/result.json``; both compute the same thing, client by client.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from privrec.errors import ParameterError
from privrec.flower.bundle import load_bundle
from privrec.flower.security import Credentials, make_credentials

Log = Callable[[str], None]


def _result(path: Path) -> dict:
    f = path / "state" / "result.json"
    if not f.is_file():
        raise RuntimeError(f"the federation ended without a result ({f} missing); see the Flower log above")
    return json.loads(f.read_text())


class _DropRunSimulationDeprecation:
    """Logging filter: Flower's deprecation notice for ``run_simulation`` (see the module docstring)."""

    @staticmethod
    def filter(record) -> bool:
        return "`run_simulation` function is deprecated" not in record.getMessage()


def quiet_flower_logs() -> None:
    """Flower's log at WARNING and above, without the ``run_simulation`` deprecation notice."""
    import logging

    flwr_log = logging.getLogger("flwr")
    flwr_log.setLevel(logging.WARNING)
    if not any(isinstance(f, _DropRunSimulationDeprecation) for f in flwr_log.filters):
        flwr_log.addFilter(_DropRunSimulationDeprecation())


def simulate(bundle: str | Path, log: Log = print, cpus: int | None = None) -> dict:
    """Run the bundle's federation on Flower's simulation engine; returns the server's record."""
    from flwr.simulation import run_simulation

    from privrec.flower.apps import client_app, server_app

    b = load_bundle(str(Path(bundle).resolve()))
    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # Ray starts its workers 15 nice levels below the caller (its worker_niceness default): the clients, where the
    # federation's training happens, then got ~1/15 of a core beside any other job (a PFCR round took ~10 min
    # instead of ~3 beside three training jobs). 0: they run at the caller's priority, as every other training
    os.environ.setdefault("RAY_worker_niceness", "0")
    # Ray's future default (accelerator env vars left alone when a client asks for no GPU); set now, it also
    # silences Ray's FutureWarning about the change
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    cpus = cpus or min(b.n_domains, os.cpu_count() or 1)
    log(f"Flower simulation: {b.n_domains} SuperNodes ({', '.join(b.names)}), {b.config.rounds} rounds, "
        f"{b.config.strategy}, codec {b.config.codec.mode}")
    quiet_flower_logs()
    run_simulation(server_app=server_app(str(b.path)), client_app=client_app(str(b.path)), num_supernodes=b.n_domains,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   # address "local": its own instance, never a cluster `ray start` left on
                                   # this machine (ray.init() would join that one, and refuse num_cpus there)
                                   "init_args": {"address": "local", "num_cpus": cpus, "include_dashboard": False,
                                                 "logging_level": "error", "log_to_driver": False}})
    return _result(b.path)


def check_loopback(address: str) -> str:
    """``host:port`` on this machine only (tests and single-machine deployment)."""
    host, _, port = address.rpartition(":")
    if host.strip("[]") not in ("127.0.0.1", "localhost", "::1") or not port.isdigit():
        raise ParameterError(f"deployment address {address!r} is not a loopback host:port; use 127.0.0.1:PORT "
                             "(a multi-organisation deployment runs the commands of docs/pfcr.md on each machine)")
    return address


APP_TOML = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "privrecpfcr"
version = "1.0.0"
description = "PFCR federated pre-training; the components are privrec.flower.apps"
license = "MIT"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "privrec"

[tool.flwr.app.components]
serverapp = "privrec.flower.apps:serverapp"
clientapp = "privrec.flower.apps:clientapp"

[tool.flwr.app.config]
bundle = "{bundle}"
"""

FLWR_CONFIG = """[superlink]
default = "privrec"

[superlink.privrec]
address = "{address}"
{security}
"""


def write_app(bundle: Path, address: str, ca: Path | None = None) -> tuple[Path, Path]:
    """The Flower app folder ``flwr run`` submits (its components are privrec's) and a ``FLWR_HOME``
    whose config names the SuperLink at ``address`` (verified against the CA certificate ``ca``; plaintext
    where None): ``(app dir, flwr home)``, under ``BUNDLE/deploy``."""
    app, home = bundle / "deploy" / "app", bundle / "deploy" / "flwr-home"
    app.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (app / "pyproject.toml").write_text(APP_TOML.format(bundle=bundle))
    (app / "pfcr_app.py").write_text('"""privrec PFCR Flower app: the components live in privrec.flower.apps."""\n')
    security = "insecure = true" if ca is None else f'root-certificates = "{ca}"'
    (home / "config.toml").write_text(FLWR_CONFIG.format(address=address, security=security))
    return app, home


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc, log_file: Path, timeout: float = 60.0) -> None:
    import socket
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"a Flower process exited with code {proc.returncode}; its log: {log_file}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s; see {log_file}")


def deploy(bundle: str | Path, log: Log = print, address: str | None = None, timeout: float = 3600.0,
           insecure: bool = False, credentials: Credentials | None = None, node_credentials: Credentials | None = None,
           connect_timeout: float = 120.0) -> dict:
    """Run the bundle's federation on Flower's deployment runtime on this machine: a SuperLink at
    ``address`` (default: a free 127.0.0.1 port) and one SuperNode per domain, separate processes,
    then ``flwr run``; every process is stopped (SIGTERM, then SIGKILL) however the run ends.

    Secured unless ``insecure``: TLS with a certificate from the federation's CA, and SuperNode
    authentication (``--enable-supernode-auth``: each SuperNode's public key registered with ``flwr
    supernode register`` before it connects). ``credentials`` (default: made for this run in
    ``BUNDLE/deploy/credentials``) are the SuperLink's; ``node_credentials`` (default the same) are what the
    SuperNodes hold: their CA certificate and private keys (tests give other ones to see them refused).
    A SuperNode not online within ``connect_timeout`` seconds is an error naming its log.
    Process logs: ``BUNDLE/deploy/*.log``."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    b = load_bundle(str(Path(bundle).resolve()))
    address = check_loopback(address or f"127.0.0.1:{_free_port()}")
    port = int(address.rpartition(":")[2])
    logs = b.path / "deploy"
    if not insecure and credentials is None:
        shutil.rmtree(logs / "credentials", ignore_errors=True)
        credentials = make_credentials(logs / "credentials", ["127.0.0.1", "localhost", "::1"], b.n_domains)
    nodes = node_credentials or credentials
    app, home = write_app(b.path, address, None if insecure else credentials.ca)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "FLWR_HOME": str(home), "FLWR_TELEMETRY_ENABLED": "0",
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    procs: list[subprocess.Popen] = []

    def start(name: str, args: list[str]) -> subprocess.Popen:
        fh = open(logs / f"{name}.log", "w")
        p = subprocess.Popen([str(bindir / args[0]), *args[1:]], stdout=fh, stderr=subprocess.STDOUT, env=env,
                             cwd=logs, start_new_session=True)
        fh.close()
        procs.append(p)
        return p

    def flwr(*args: str) -> str:
        done = subprocess.run([str(bindir / "flwr"), *args], env=env, cwd=logs, capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"`flwr {' '.join(args)}` exited with code {done.returncode}: "
                               f"{(done.stdout + done.stderr).strip()[-600:]}")
        return done.stdout

    try:
        security = (["--insecure"] if insecure else
                    ["--ssl-ca-certfile", str(credentials.ca), "--ssl-certfile", str(credentials.certificate),
                     "--ssl-keyfile", str(credentials.key), "--enable-supernode-auth"])
        link = start("superlink", ["flower-superlink", *security, "--disable-runtime-dependency-installation",
                                   "--host", "127.0.0.1", "--port", str(port), "--database",
                                   str(logs / "superlink.db")])
        _wait_listening(port, link, logs / "superlink.log")
        log(f"Flower deployment: SuperLink on {address} ({'plaintext' if insecure else 'TLS, authenticated SuperNodes'})"
            f", {b.n_domains} SuperNodes ({', '.join(b.names)})")
        if not insecure:
            for k in range(b.n_domains):               # the SuperLink admits these keys, and no others
                flwr("supernode", "register", str(credentials.node_public(k)), "privrec")
        for k in range(b.n_domains):
            node_port = _free_port()
            security = (["--insecure"] if insecure else
                        ["--root-certificates", str(nodes.ca), "--auth-supernode-private-key", str(nodes.node_key(k))])
            node = start(f"supernode{k}", ["flower-supernode", *security, "--superlink", address, "--port",
                                           str(node_port), "--node-config",
                                           f"partition-id={k} num-partitions={b.n_domains}"])
            _wait_listening(node_port, node, logs / f"supernode{k}.log")
        if not insecure:
            _wait_online(lambda: flwr("supernode", "list", "privrec", "--format", "json"), b.n_domains, procs[1:],
                         logs, connect_timeout)
        with open(logs / "flwr-run.log", "w") as fh:
            rc = subprocess.run([str(bindir / "flwr"), "run", str(app), "privrec", "--stream"], env=env, cwd=logs,
                                stdout=fh, stderr=subprocess.STDOUT, timeout=timeout).returncode
        if rc != 0:
            raise RuntimeError(f"`flwr run` exited with code {rc}; see {logs / 'flwr-run.log'}")
        return _result(b.path)
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(max(end - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def _wait_online(listing, n: int, nodes, logs: Path, timeout: float) -> None:
    """Until the SuperLink lists ``n`` SuperNodes online; a SuperNode that exits, or is not online within
    ``timeout`` seconds (refused: a key the SuperLink does not know, a CA that did not sign its
    certificate), is an error naming its log."""
    import json
    import time

    end = time.monotonic() + timeout
    while True:
        for k, p in enumerate(nodes):
            if p.poll() is not None:
                log_file = logs / f"supernode{k}.log"
                raise RuntimeError(f"SuperNode {k} could not join the SuperLink: {refusal(log_file)} "
                                   f"(exit code {p.returncode}; its log: {log_file})")
        try:
            listed = json.loads(listing()).get("nodes", [])
        except (RuntimeError, ValueError):
            listed = []
        online = [x for x in listed if str(x.get("status", "")).lower() == "online"]
        if len(online) >= n:
            return
        if time.monotonic() > end:
            raise RuntimeError(f"{n - len(online)} of {n} SuperNodes did not join the SuperLink within {timeout:.0f} s: "
                               "a SuperNode whose key is not registered, or that does not trust the SuperLink's "
                               f"certificate (another CA), is refused; see {logs}/supernode*.log")
        time.sleep(1.0)


def refusal(log_file: Path) -> str:
    """Why a SuperNode was refused, read from its log, in words naming the fix."""
    try:
        text = log_file.read_text(errors="replace")
    except OSError:
        return "no log"
    if "CERTIFICATE_VERIFY_FAILED" in text or "handshake" in text.lower():
        return ("it does not trust the SuperLink's TLS certificate (signed by another CA than its --root-certificates, "
                "or issued for another host): give it the federation's ca.crt")
    if "Failed to activate SuperNode" in text:
        return ("the SuperLink refused its key (not registered): register its public key with "
                "`flwr supernode register supernode-K.pub FEDERATION` on the SuperLink's side")
    lines = [ln for ln in text.splitlines() if "ERROR" in ln]
    return lines[-1].strip() if lines else "see its log"
