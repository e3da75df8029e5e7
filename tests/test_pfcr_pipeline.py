"""``reproduce pfcr`` end to end on two tiny synthetic platforms (the real run is on ML-1M): every
Tables 1–3 cell trains, PFCR runs carry each client's certificate over every round, a rerun resumes.
The Flower runtime is replaced by the plain loop it is tested equal to (tests/test_flower.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from privrec.errors import ParameterError


def _platforms():
    from conftest import make_frame

    from privrec.data.interactions import Interactions
    from privrec.data.multidomain import build_disjoint

    a = make_frame(n_users=30, n_items=24, per_user=10, seed=1)
    b = make_frame(n_users=25, n_items=20, per_user=10, seed=2).assign(user_id=lambda f: "x" + f.user_id)
    tables = [Interactions.from_frame(a, name="A"), Interactions.from_frame(b, name="B")]
    data = build_disjoint(tables, min_user=5, min_item=3)
    n = sum(d.n_items for d in data.domains)
    emb = np.random.default_rng(0).normal(size=(n, 16)).astype(np.float32)
    return data, emb


def test_reproduce_pfcr_trains_every_cell_with_certificates_and_resumes(tmp_path, monkeypatch):
    from test_flower import plain_federation

    from privrec.experiments import pfcr as P
    from privrec.flower import run as flower_run
    from privrec.training.trainer import TrainConfig

    monkeypatch.setattr(flower_run, "simulate", plain_federation)
    cfg = P.PFCRConfig(max_len=6, hidden=8, heads=2, layers=1, n_codebooks=4, n_centroids=4, context_words=4, rounds=2,
                       seeds=(0,), epsilons=(0.9,), buckets_grid=(128,), train=TrainConfig(epochs=2, batch_size=16, patience=1, select_metric="hr@10",
                                                     progress=False))
    data = _platforms()
    logs: list[str] = []
    res = P.reproduce(cfg, tmp_path / "out", log=logs.append, data=data)
    # baselines, PFCR-FD, 3 codecs, the gate's noise-partner federations (one per platform), Table 3 strategies, Fig. 3
    assert len(res["runs"]) == 3 + 1 + 3 + 2 + 3 + 2
    f3 = res["fig3"]
    assert [p["epsilon"] for p in sorted(f3["points"]["epsilon"], key=lambda p: p["epsilon"])] == [0.5, 0.9]
    assert [p["buckets"] for p in sorted(f3["points"]["buckets"], key=lambda p: p["buckets"])] == [64, 128]
    assert len(f3["rounds"]) == 1 and len(f3["rounds"][0]["valid"]) == 2
    one = {(p["epsilon"], p["buckets"]): p["true"] for p in f3["per_coordinate"]}
    assert one[(0.5, 64)] == pytest.approx(math.log(1 + 64 * (math.exp(0.5) + 1)))
    assert (tmp_path / "out" / "fig3.png").is_file()
    names = [s["row"] for s in res["summary"]]
    assert "PFCR full, codec paper, fedavg" in names and "PFCR-F (local + full prompt)" in names
    for r in res["runs"]:
        assert set(r["metrics"]) >= ({f"{r['labels']['target']}/pretrained"} if "partner" in r["labels"]
                                     else {"A/pretrained", "B/pretrained"})
        assert all(0 <= m["ndcg@10"] <= m["hr@10"] <= 1 for m in r["metrics"].values())
    paper = next(r for r in res["runs"] if r["labels"]["mode"] == "paper")["extra"]["guarantees"]["A"]
    n_coords = 4 * 4 * 8
    assert float(paper["epsilon"]) > math.log(1 + 64 * (math.exp(0.5) + 1))        # far beyond one coordinate
    assert paper["parameters"]["rounds"] == 2 and paper["parameters"]["n_coords"] == n_coords
    plain = next(r for r in res["runs"] if r["labels"]["mode"] == "none")["extra"]["guarantees"]["A"]
    assert math.isinf(float(plain["epsilon"]))
    assert len(res["claims"]) == 6 and (tmp_path / "out" / "results.md").is_file()
    md = (tmp_path / "out" / "results.md").read_text()
    assert "Certificate of one client" in md and "Table 3 analog" in md and "scaffold" in md
    rows = {s["row"]: s for s in res["summary"]}                   # the true (ε, δ) per client, δ beside ε
    assert rows["PFCR full, codec paper, fedavg"]["delta"] == 0.0                           # pure ε-LDP
    assert 0 < rows["PFCR full, codec calibrated, fedavg"]["delta"] < 1                    # (ε, δ)-LDP
    assert rows["SASRec"]["delta"] is None and "| true ε per client | δ | model private |" in md
    assert "no: uploads in the clear" in md and "towards the other platforms (LDP uploads)" in md
    assert "1 local epoch(s)" in md and "## Training length" in md and "SASRec · None · None · 0" in md
    for r in res["runs"]:   # Table 3's strategies and the gate's noise partners: the federated model, no prompt
        if r["labels"]["strategy"] in ("fedprox", "scaffold", "popcode") or "partner" in r["labels"]:
            assert not any(k.endswith(("/full", "/light")) for k in r["metrics"])
        if r["labels"]["method"] == "PFCR" and "epsilon" not in r["labels"]:   # a run's seconds: all its parts
            assert r["fit"]["seconds"] >= sum(p["seconds"] for p in r["fit"]["parts"].values()) - 1e-6
            assert r["fit"]["parts"]["federation"]["seconds"] > 0
    assert "PFCR light, codec paper, fedprox" not in names and "PFCR light, codec paper, fedavg" in names
    assert [g["where"] for g in res["gates"]] == ["A", "B"] and "Positive-control gate" in md
    noise = next(r for r in res["runs"] if r["labels"].get("partner") == "noise" and r["labels"]["target"] == "A")
    assert set(noise["metrics"]) == {"A/pretrained"}
    pop = next(r for r in res["runs"] if r["labels"]["strategy"] == "popcode")["extra"]["guarantees"]["A"]
    assert 0 < pop["parameters"]["n_coords"] < n_coords and float(pop["epsilon"]) < float(paper["epsilon"])
    again = P.reproduce(cfg, tmp_path / "out", log=logs.append, data=data)     # everything reused
    assert [r["metrics"] for r in again["runs"]] == [r["metrics"] for r in res["runs"]]


@pytest.mark.parametrize("bad, match", [(dict(epsilon=0.0), "epsilon"), (dict(buckets=48), "power of two"),
                                        (dict(buckets=1), "power of two"), (dict(clip=0.0), "clip"),
                                        (dict(rounds=0), "rounds"), (dict(local_epochs=0), "local_epochs"),
                                        (dict(runtime="ray"), "runtime"),
                                        (dict(modes=("secure",)), "codec modes"),
                                        (dict(strategies=("fedavg",)), "strategies"),
                                        (dict(popular_share=0.0), "popular_share")])
def test_bad_pfcr_settings_are_refused(bad, match):
    from privrec.experiments import pfcr as P

    with pytest.raises(ParameterError, match=match):
        P.PFCRConfig(**bad)


def test_statistics_count_each_platforms_own_users_and_items():
    data, _ = _platforms()
    stats = pd.DataFrame(data.statistics())
    assert list(stats.domain) == ["A", "B"] and (stats.users > 0).all() and (stats["items"] > 0).all()


def test_a_run_stopped_after_some_parts_resumes_without_training_them_again(tmp_path):
    """One PFCR run is several trainings (a federation, then prompt tuning per domain): each finished
    part is kept beside the run's state, so a stop in a later part does not redo the earlier ones,
    and the kept parts go once the run is recorded."""
    from privrec.experiments import pfcr_train as T

    state = tmp_path / "key-PFCR_paper_fedavg_0.pt"
    calls: list[str] = []

    def part(name, value):
        calls.append(name)
        return {"value": value, "array": np.arange(3)}

    def stopped():
        raise KeyboardInterrupt

    first = T.remembered(T.side_state(state, "federation"), lambda: part("federation", 1))
    with pytest.raises(KeyboardInterrupt):
        T.remembered(T.side_state(state, "A-full"), stopped)
    again = T.remembered(T.side_state(state, "federation"), lambda: part("federation", 2))
    assert calls == ["federation"] and again["value"] == first["value"] == 1
    assert np.array_equal(again["array"], np.arange(3))
    assert not list(tmp_path.glob("*A-full*"))                     # an interrupted part leaves no result
    T.clear_side_states(state)
    assert not list(tmp_path.iterdir())


def test_a_higher_epoch_cap_continues_capped_runs_and_keeps_their_federation(tmp_path, monkeypatch):
    """A run whose trainings ended on the epoch cap is recorded as capped (not early-stopped), keeps its
    parts, and under a higher cap continues those trainings from their epoch states with the same
    federation, instead of being reused as it was or started over."""
    from test_flower import plain_federation

    from privrec.experiments import pfcr as P
    from privrec.flower import run as flower_run
    from privrec.training.trainer import TrainConfig

    federations: list[int] = []

    def counted(*args, **kw):
        federations.append(1)
        return plain_federation(*args, **kw)

    monkeypatch.setattr(flower_run, "simulate", counted)
    train = TrainConfig(epochs=1, batch_size=16, patience=5, select_metric="hr@10", progress=False)
    cfg = P.PFCRConfig(max_len=6, hidden=8, heads=2, layers=1, n_codebooks=4, n_centroids=4, context_words=4,
                       rounds=1, seeds=(0,), modes=("paper",), strategies=(), baselines=("SASRec",), sweep_seeds=(),
                       train=train)
    data = _platforms()
    logs: list[str] = []
    first = P.reproduce(cfg, tmp_path / "out", log=logs.append, data=data)
    assert len(first["runs"]) == 3 and len(federations) == 1
    assert all(not r["fit"]["stopped_early"] and r["fit"]["epochs_run"] == 1 for r in first["runs"])
    logs.clear()
    again = P.reproduce(replace(cfg, train=replace(train, epochs=3)), tmp_path / "out", log=logs.append, data=data)
    assert len(federations) == 1                                   # the capped federated run kept its federation
    assert any("resuming from" in m and "after epoch 1" in m for m in logs)
    for r in again["runs"]:
        assert max(p["epochs_run"] for p in r["fit"]["parts"].values() if "epochs_run" in p) == 3
    logs.clear()
    P.reproduce(replace(cfg, train=replace(train, epochs=3)), tmp_path / "out", log=logs.append, data=data)
    assert not any("resuming from" in m for m in logs)             # now reused as recorded


def test_table3_runs_on_its_own_seeds_and_sets_fedavg_beside_them_on_those_seeds():
    """Table 3's strategies train on ``table3_seeds`` only (Table 1's claim gets every seed), and the report's
    Table 3 compares them with FedAvg on those seeds, not with FedAvg's mean over every seed."""
    from privrec.experiments import pfcr as P
    from privrec.experiments.pfcr_report import table3
    from privrec.experiments.runner import RunRecord

    cfg = P.PFCRConfig(seeds=(0, 1, 2), table3_seeds=(1,), epsilons=(), buckets_grid=(), baselines=("SASRec",))
    keys = [r.key for r in P.PFCRExperiment(cfg, _platforms()[0], None).runs()]
    table3_keys = [k for k in keys if any(s in k for s in cfg.strategies)]
    assert len(table3_keys) == 3 and all(k.endswith("|1") for k in table3_keys)
    assert sum("|fedavg|" in k and "partner" not in k for k in keys) == 3 * len(cfg.modes)
    assert sum("partner=noise" in k for k in keys) == 3 * 2                # the gate's, per seed and platform
    recall = {0: 0.10, 1: 0.20, 2: 0.30}
    records = [RunRecord(P.run_key(lab, s), s, lab, {}, {f"{d}/pretrained": {"hr@10": recall[s] + 0.01 * i, "hr@50": 0.5,
                                                                     "ndcg@10": 0.1, "ndcg@50": 0.2} for d in "AB"})
               for i, lab in enumerate([{"method": "PFCR", "mode": "paper", "strategy": "fedavg"}, *P.table3_cells(cfg)])
               for s in (cfg.seeds if lab["strategy"] == "fedavg" else cfg.table3_seeds)]
    rows = table3(cfg, records, ["A", "B"])
    assert [r["labels"]["strategy"] for r in rows] == ["fedavg", "fedprox", "scaffold", "popcode"]
    assert all(r["seeds"] == [1] for r in rows)
    assert rows[0]["test"]["A"]["R@10"]["mean"] == pytest.approx(20.0)      # seed 1's FedAvg, not the 3-seed mean
