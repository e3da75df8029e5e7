"""Flower's ``ClientApp`` and ``ServerApp`` for PFCR's federated pre-training (Sec. 3.4), message API.

* **ClientApp** — ``train``: the global table E arrives as ``arrays["table"]``; the client runs
  :func:`privrec.flower.client.train_round` and replies with its *encoded* table change
  (``arrays["upload"]``, :func:`~privrec.flower.client.pack`) and ``metrics["num-examples"]``
  (its training sample count, FedAvg's weight). ``evaluate``: validation metrics of its model after
  the round. A node's domain is ``node_config["partition-id"]`` (set by the simulation engine, or
  ``flower-supernode --node-config "partition-id=K"`` in deployment).
* **ServerApp** — Flower's :class:`~flwr.serverapp.strategy.FedAvg` / :class:`~flwr.serverapp.strategy.FedProx`
  with their sampling, messaging and round loop (SCAFFOLD and PopCode: FedAvg's); ``aggregate_train`` is
  replaced (:class:`CodecAggregation`): the uploads are decoded by the codec and aggregated onto the
  current E by :func:`privrec.flower.server.aggregate` (an encoded upload is not a weight to average),
  and ``configure_train`` adds SCAFFOLD's server control ``arrays["control"]``. Each round's E is saved (``state/global-round{t}.npy``) and ``state/result.json`` records
  per-round losses, validation metrics, bytes uploaded, and the best round by validation Recall@10
  (early stopping selects that round's model; the rounds run to the configured count).

The bundle folder comes from the run config (``bundle=...``: ``flwr run --run-config``) or, for the
simulation engine, from :func:`client_app` / :func:`server_app`'s argument.
"""

from __future__ import annotations

import json

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg, FedProx

from privrec.flower import client as C
from privrec.flower.bundle import Bundle, load_bundle
from privrec.flower.server import ServerState, aggregate
from privrec.utils.io import atomic_path

SELECT = "hr@10"                     # early stopping: validation Recall@10 (leave-one-out: = HR@10)


def _path(context: Context, default: str | None) -> str:
    path = context.run_config.get("bundle", default)
    if not path:
        raise ValueError("no federation bundle: pass --run-config \"bundle='DIR'\" (flwr run) or client_app(DIR)")
    return str(path)


def client_app(bundle: str | None = None) -> ClientApp:
    """The PFCR ClientApp reading ``bundle`` (or the run config's ``bundle``)."""
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        b = load_bundle(_path(context, bundle))
        k = int(context.node_config["partition-id"])
        round_ = int(msg.content["config"]["server-round"])
        received = msg.content["arrays"]
        control = received["control"].numpy() if "control" in received else None      # SCAFFOLD's c
        upload, n, _loss, steps = C.train_round(b, k, round_, received["table"].numpy(), control)   # loss stays here
        arrays = {name: _array(a) for name, a in C.pack(upload).items()}
        nbytes = int(sum(len(a.data) for a in arrays.values()))
        # what leaves the client beside the encoded upload: counts the server needs to weight and correct the
        # aggregate (named in the certificate's notes)
        metrics = MetricRecord({"num-examples": n, "upload-bytes": nbytes, "partition-id": k, "local-steps": steps})
        return Message(RecordDict({"arrays": ArrayRecord(arrays), "metrics": metrics}), reply_to=msg)

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        b = load_bundle(_path(context, bundle))
        k = int(context.node_config["partition-id"])
        round_ = int(msg.content["config"]["server-round"])
        metrics, users = C.evaluate_round(b, k, round_, msg.content["arrays"]["table"].numpy())
        out = {"num-examples": users, "partition-id": k, **{m.replace("@", "-at-"): v for m, v in metrics.items()}}
        return Message(RecordDict({"metrics": MetricRecord(out)}), reply_to=msg)

    return app


class CodecAggregation:
    """Mixin over a Flower strategy: decode codec uploads and aggregate them onto the current table
    (:func:`privrec.flower.server.aggregate`: FedAvg; PopCode's popular rows; SCAFFOLD's controls,
    whose server control c travels to the clients beside the table as ``arrays["control"]``)."""

    bundle: Bundle
    server: ServerState | None = None
    log_rounds: dict

    def configure_train(self, server_round, arrays, config, grid):
        table = arrays["table"].numpy().astype(np.float64)
        controls = self.server.controls if self.server is not None else {}
        self.server = ServerState(table, controls)
        if self.server.control is not None:
            arrays = ArrayRecord({"table": arrays["table"], "control": _array(self.server.control.astype(np.float32))})
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        valid, failed = self._check_and_log_replies(replies, is_train=True, validate=False)
        if failed or len(valid) < self.bundle.n_domains:
            reasons = "; ".join(sorted({m.error.reason.strip().splitlines()[-1] for m in failed}))[:2000]
            raise RuntimeError(f"round {server_round}: {len(failed)} of {self.bundle.n_domains} client(s) failed "
                               f"({reasons or 'no reply'})")
        codec, shape = self.bundle.config.codec, self.server.table.shape
        ordered = sorted(valid, key=lambda m: int(m.content["metrics"]["partition-id"]))
        uploads = [C.unpack({n: a.numpy() for n, a in m.content["arrays"].items()}, codec, shape) for m in ordered]
        weights = [float(m.content["metrics"]["num-examples"]) for m in ordered]
        steps = [int(m.content["metrics"]["local-steps"]) for m in ordered]
        self.server = aggregate(self.bundle, self.server, uploads, weights, steps)
        new = self.server.table.astype(np.float32)
        row = self.log_rounds.setdefault(server_round, {"round": server_round})
        row["upload_bytes"] = [int(m.content["metrics"]["upload-bytes"]) for m in ordered]
        with atomic_path(self.bundle.global_table(server_round)) as tmp, open(tmp, "wb") as fh:
            np.save(fh, new)
        return ArrayRecord({"table": _array(new)}), MetricRecord({"upload-bytes": int(sum(row["upload_bytes"]))})

    def aggregate_evaluate(self, server_round, replies):
        valid, _ = self._check_and_log_replies(replies, is_train=False, validate=False)
        ordered = sorted(valid, key=lambda m: int(m.content["metrics"]["partition-id"]))
        per = [{k.replace("-at-", "@"): float(v) for k, v in m.content["metrics"].items()
                if k not in ("partition-id", "num-examples")} for m in ordered]
        users = [float(m.content["metrics"]["num-examples"]) for m in ordered]
        row = self.log_rounds.setdefault(server_round, {"round": server_round})
        row["valid"] = per
        row["valid_mean"] = {k: float(np.average([p[k] for p in per], weights=users)) for k in per[0]}
        return MetricRecord({k.replace("@", "-at-"): v for k, v in row["valid_mean"].items()})


class CodecFedAvg(CodecAggregation, FedAvg):
    """FedAvg (weights: clients' sample counts) over decoded codec uploads."""


class CodecFedProx(CodecAggregation, FedProx):
    """FedProx: FedAvg aggregation; clients add μ/2‖E − E_global‖² locally (``proximal-mu`` in their config)."""

# SCAFFOLD and PopCode are not Flower strategies: both are FedAvg's message flow (CodecFedAvg) with
# :func:`privrec.flower.server.aggregate`'s per-strategy step and the client's hooks.


def _array(a: np.ndarray):
    from flwr.app import Array

    return Array(np.ascontiguousarray(a))


def strategy_for(b: Bundle):
    n = b.n_domains
    common = dict(fraction_train=1.0, fraction_evaluate=1.0, min_train_nodes=n, min_evaluate_nodes=n,
                  min_available_nodes=n)
    cfg = b.config
    s = CodecFedProx(proximal_mu=cfg.proximal_mu, **common) if cfg.strategy == "fedprox" else CodecFedAvg(**common)
    s.bundle, s.log_rounds = b, {}
    return s


def server_app(bundle: str | None = None) -> ServerApp:
    """The PFCR ServerApp: ``rounds`` of the configured strategy from ``table0``; writes ``state/result.json``."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        b = load_bundle(_path(context, bundle))
        strategy = strategy_for(b)
        strategy.start(grid=grid, initial_arrays=ArrayRecord({"table": _array(b.table0())}),
                       num_rounds=b.config.rounds, train_config=ConfigRecord({}), evaluate_config=ConfigRecord({}))
        rounds = [strategy.log_rounds[r] for r in sorted(strategy.log_rounds)]
        best = max(rounds, key=lambda r: r.get("valid_mean", {}).get(SELECT, -1.0))
        result = {"rounds": rounds, "best_round": int(best["round"]), "select": SELECT,
                  "n_domains": b.n_domains, "names": list(b.names)}
        with atomic_path(b.state / "result.json") as tmp:
            tmp.write_text(json.dumps(result, indent=1))

    return app


# `flwr run` / SuperLink deployment reads these module attributes (bundle from the run config)
clientapp = client_app()
serverapp = server_app()
