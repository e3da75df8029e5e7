"""A sixth paper needs only the runner's contract (docs/architecture.md): an experiment (runs, fingerprint,
cap, prepare, train) and a report module (result, write). This toy one — a mechanism that adds Laplace noise to
a score, against the score in the clear — gets progress, resume, report-only, the output's lock and ownership,
the claim statistics and the not-run section from the shared pieces, defined entirely in this file."""

from __future__ import annotations

import json
import types
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from privrec.experiments import runner
from privrec.experiments.report import markdown_table, save_report, trailer
from privrec.experiments.runner import RunRecord, RunSpec
from privrec.experiments.stats import evidence, paired, verdict
from privrec.privacy.guarantee import Guarantee
from privrec.utils.repro import config_hash


def laplace_score(x: np.ndarray, epsilon: float, rng: np.random.Generator) -> tuple[np.ndarray, Guarantee]:
    """The toy mechanism: arrays and a Generator in, arrays and a guarantee out (values in [0, 1], sensitivity 1)."""
    g = Guarantee(mechanism="toy-laplace", definition="epsilon-LDP", epsilon=epsilon, delta=0.0,
                  unit="one value", parameters={"scale": 1 / epsilon})
    return x + rng.laplace(0.0, 1.0 / epsilon, size=x.shape), g


@dataclass(frozen=True)
class ToyConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    epsilon: float = 1.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ToyExperiment:
    cfg: ToyConfig
    trained: list

    def runs(self) -> list[RunSpec]:
        return [RunSpec(f"{m}|{s}", s, {"method": m}) for s in self.cfg.seeds for m in ("clear", "private")]

    def fingerprint(self) -> str:
        return config_hash({"epsilon": self.cfg.epsilon})

    def cap(self) -> tuple[int, int, int]:
        return 1, 1, 1

    def prepare(self, spec: RunSpec, log) -> None:
        pass

    def train(self, spec: RunSpec, state: Path, log) -> RunRecord:
        self.trained.append(spec.key)
        rng = np.random.default_rng(spec.seed)
        x = rng.uniform(size=1000)
        if spec.labels["method"] == "private":
            x, _ = laplace_score(x, self.cfg.epsilon, rng)
        score = float(np.mean(np.abs(x - 0.5) < 0.25))
        return RunRecord(spec.key, spec.seed, spec.labels, {"epochs_run": 1, "best_epoch": 1, "stopped_early": True},
                         {"test": {"score": score}})


def _result(cfg, exp, outcome, *, command, seconds, env) -> dict:
    by = {m: {r.seed: r.metric("test", "score") for r in outcome.records if r.labels["method"] == m}
          for m in ("clear", "private")}
    check = paired(by["clear"], by["private"])
    check = check.to_dict() if check else None
    return {"kind": "toy", "config": cfg.to_dict(), "runs": [r.to_dict() for r in outcome.records],
            "claim": {"check": check, "verdict": verdict(check)}, "missing": outcome.missing,
            "training_seconds": 0.0, "seconds": seconds, "command": command, "environment": env}


def _write(out_dir, res) -> None:
    rows = [[r["key"], f"{r['metrics']['test']['score']:.3f}"] for r in res["runs"]]
    md = "\n".join(["# Toy paper", "", markdown_table(["run", "score"], rows), "",
                    f"- clear beats private: **{res['claim']['verdict']}** — {evidence(res['claim']['check'])}",
                    "", *trailer(res)]) + "\n"
    save_report(out_dir, res, md)


TOY_REPORT = types.SimpleNamespace(__name__="privrec.experiments.toy_report", result=_result, write=_write)


def _reproduce(out: Path, trained: list, **kw) -> dict:
    return runner.reproduce_grid(ToyConfig(), lambda c, pub: ToyExperiment(c, trained), TOY_REPORT, out,
                                 log=lambda _: None, describe=lambda r: r.key, started=0.0, command="toy", **kw)


def test_a_sixth_paper_gets_progress_resume_report_and_claims_from_the_shared_pieces(tmp_path):
    out, trained = tmp_path / "toy", []
    res = _reproduce(out, trained)
    assert sorted(trained) == sorted(f"{m}|{s}" for s in (0, 1, 2) for m in ("clear", "private"))
    assert res["claim"]["verdict"] == "holds" and res["claim"]["check"]["ahead"] == 3
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "n = 3 paired seeds" in md and "(paired t)" in md and (out / ".privrec").is_file()
    lines = (tmp_path / "toy.progress.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6 and all(json.loads(x)["fingerprint"] for x in lines)

    again = []
    _reproduce(out, again)                                   # resume: every run is finished, none retrains
    assert again == []
    only = _reproduce(out, again, train_missing=False)       # report-only gives the same content
    assert only["claim"] == res["claim"] and again == []


def test_the_toy_mechanism_states_its_guarantee():
    out, g = laplace_score(np.zeros(3), 2.0, np.random.default_rng(0))
    assert out.shape == (3,) and g.epsilon == 2.0 and g.delta == 0.0


def test_a_new_mechanism_is_one_function_and_one_registry_entry(monkeypatch):
    """Registering a sequence mechanism (its guarantee, release function and options) is all that
    ``release.publish`` needs to publish with it; unknown kinds are refused by what the registry says."""
    import pytest

    from privrec.errors import ParameterError
    from privrec.privacy import registry
    from privrec.release.publish import perturb_sequences, project_ratings

    def guarantee(eps, **_):
        return Guarantee(mechanism="toy-keep", definition="epsilon-DP", epsilon=eps, delta=0.0, unit="row",
                         parameters={"epsilon": eps})

    def release(rows, eps, rng, **_):
        return rows.copy(), guarantee(eps)

    toy = registry.Mechanism("toy-keep", "toy paper", __name__, "sequences", 1.0, "publishes rows unchanged (toy)",
                             guarantee, release=release, options=frozenset({"max_len"}), certified_as=("toy-keep",),
                             recompute=lambda p: guarantee(p["epsilon"]))
    monkeypatch.setitem(registry.MECHANISMS, "toy-keep", toy)
    rows = np.array([[0, 1, 2], [3, 1, 2]])
    out, g = perturb_sequences(rows, 3, "toy-keep", 2.0, np.random.default_rng(0))
    assert (out == rows).all() and g.epsilon == 2.0
    assert "toy-keep" in registry.publishing("sequences")
    assert registry.guarantee_of("toy-keep", 3.0).epsilon == 3.0
    with pytest.raises(ParameterError, match="does not publish rating matrices; use one of jlt, sjlt"):
        project_ratings(np.ones((2, 3)), "toy-keep", 1.0, np.random.default_rng(0), n_prime=2)
    # a reader re-checks the toy release's certificate through the same entry (no second table)
    from privrec.errors import ReleaseError
    from privrec.release.verify import check_certificate

    cert = {"mechanism": "toy-keep", "guarantee": g.to_dict(), "summary": "toy-keep: epsilon=2"}
    check_certificate(cert, "toy")
    cert["guarantee"]["epsilon"] = 1e-9
    with pytest.raises(ReleaseError, match="guarantee.epsilon is 1e-09, its parameters give 2.0"):
        check_certificate(cert, "toy")
