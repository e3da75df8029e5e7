"""``reproduce pricdr`` end to end on a toy cross-domain set (the real run is on ML-1M): every
method trains, releases are written once per cell with certificates, the report has Table 1, the
claims, the sweeps with true ε and the figure; a rerun retrains nothing; bad settings are refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from privrec.data.crossdomain import build, split_by_column
from privrec.errors import ParameterError
from privrec.experiments import pricdr as P
from privrec.training.trainer import TrainConfig
from tests.test_pricdr_parts import _clustered


def test_reproduce_pricdr_grid_report_and_resume(tmp_path):
    a, b = split_by_column(_clustered(n_users=40, n_items=160, per=12), "domain")
    data = build(a, b, min_user=5, min_item=1)
    cfg = P.PriCDRConfig(dataset="toy", directions=(("B", "A"),), seeds=(0, 1), sweep_direction=("B", "A"),
                         sweep_epsilons=(64.0,), sweep_n_primes=(8,), sweep_sps=(0.5,), sweep_sds=(0.5,),
                         sweep_true_epsilons=(64.0,), n_prime=16, hidden=(32, 8),
                         train=TrainConfig(epochs=1, batch_size=256, patience=1, progress=False))
    logs: list[str] = []
    res = P.reproduce(cfg, tmp_path / "out", log=logs.append, data=data)
    methods = [r["labels"]["method"] for r in res["runs"] if r["labels"]["sd"] in (None, 1.0)
               and r["labels"]["epsilon"] in (None, 1.0) and r["labels"]["n_prime"] in (None, 16)
               and r["labels"]["sp"] in (None, 0.1) and r["labels"]["calibration"] in (None, "paper")]
    assert sorted(methods) == sorted(list(P.METHODS) * 2)          # Table 1, two seeds
    sweep = [r for r in res["runs"] if r["seed"] == 0]
    assert len(sweep) == len(P.METHODS) + 2 + 1 + 1 + 2 + 1      # Table 1 + Fig. 2 (J, S) + 3 + 4 + 5 (J, S) + 2b
    assert "A-jlt-eps1.0-n16-sd1.0-seed0" in res["certificates"]
    assert res["certificates"]["A-jlt-eps1.0-n16-sd0.5-seed0"]["input"]["kept_fraction"] == 0.5
    claims = {(c["ours"], c["theirs"]) for c in res["claims"]}
    assert ("PriCDR-J", "DMF") in claims and ("PriCDR-S", "PriCDR-J") in claims
    fig2 = res["sweeps"]["fig2_epsilon"]
    assert all(r["summary"] and 0 < r["true_epsilon"] < 64 for r in fig2)
    (fig2b,) = res["sweeps"]["fig2b_true_epsilon"]           # w calibrated to the true ε: it is met, not far below
    assert fig2b["summary"] and 60 < fig2b["true_epsilon"] <= 64 and 0 < fig2b["signal_share"] < 1
    assert "A-jlt-eps64.0-tight-n16-sd1.0-seed0" in res["certificates"]
    md = (tmp_path / "out" / "results.md").read_text()
    assert "Table 1 analog: target B, source A" in md and "true ε" in md and "figs2-5_sweeps.png" in md
    assert "| model private |" in md and "towards the source (release); not the target" in md   # the unit, per row
    j = next(line for line in md.splitlines() if line.startswith("| PriCDR-J"))
    assert "(" in j.split("|")[-3] and j.split("|")[-3].strip() != "–"    # its release's true ε per rating / user row
    assert (tmp_path / "out" / "figs2-5_sweeps.png").stat().st_size > 1000
    logs.clear()
    again = P.reproduce(cfg, tmp_path / "out", log=logs.append, data=data)
    assert not any(m.startswith("published") for m in logs) and again["summary"] == res["summary"]
    with pytest.raises(ParameterError, match="methods"):
        replace(cfg, methods=("SASRec",))
    with pytest.raises(ParameterError, match="epsilon"):
        replace(cfg, sweep_epsilons=(0.0,))
    with pytest.raises(ParameterError, match=r"\(0, 1\]"):
        replace(cfg, sweep_sps=(1.5,))


def test_train_target_reads_a_checked_release(tmp_path, capsys):
    """``train heterocdr --target B --source REL``: the release of the other domain is read with its
    guarantee; the target's own release, a missing source and bad CLI combinations are refused."""
    from privrec.cli import main
    from privrec.errors import ReleaseError
    from privrec.release.crossdomain import publish_domain_matrix

    a, b = split_by_column(_clustered(n_users=40, n_items=160, per=12), "domain")
    data = build(a, b, min_user=5, min_item=1)
    publish_domain_matrix(tmp_path / "relA", data, "A", "jlt", 8.0, 0, n_prime=16)
    publish_domain_matrix(tmp_path / "relB", data, "B", "jlt", 8.0, 0, n_prime=16)
    cfg = P.PriCDRConfig(hidden=(32, 8), train=TrainConfig(epochs=1, batch_size=256, patience=1, progress=False))
    res = P.train_target("heterocdr", "B", tmp_path / "relA", cfg, (0,), log=lambda m: None, data=data)
    assert res["guarantee"]["epsilon"] < 8 and 0 <= res["test"]["sampled"]["ndcg@10"]["mean"] <= 1
    logs: list[str] = []
    raw = P.train_target("ddtcdr", "B", None, cfg, (0,), log=logs.append, data=data)   # the other domain, raw
    assert raw["guarantee"] is None and any("raw (unprotected)" in m and "'A'" in m for m in logs)
    with pytest.raises(ReleaseError, match="target domain"):
        P.train_target("heterocdr", "B", tmp_path / "relB", cfg, (0,), data=data)
    with pytest.raises(ParameterError, match="--source"):
        P.train_target("heterocdr", "B", None, cfg, (0,), data=data)
    assert main(["train", "dmf"]) != 0 and "--target" in capsys.readouterr().err
    assert main(["train", "bpr", "--target", "drama", "--source", str(tmp_path / "relA")]) != 0
    assert "heterocdr only" in capsys.readouterr().err


def _claims(values: dict[str, tuple[float, ...]], gate: bool = True) -> list[dict]:
    """The report's claims among the methods of ``values`` for one direction B <- A, runs with these sampled
    NDCG@10 per method and seed; with ``gate`` the positive-control gate's runs are added so that it passes
    (HeteroCDR-raw well ahead of DMF and of the noise control, on every seed)."""
    from privrec.experiments.pricdr_report import claims, table1_cells
    from privrec.experiments.runner import RunRecord

    controls = {"DMF": (0.40, 0.42, 0.40), "Noise (control)": (0.40, 0.42, 0.40), "HeteroCDR-raw": (0.60, 0.63, 0.61)}
    every = {**(controls if gate else {}), **values}
    cfg = P.PriCDRConfig(directions=(("B", "A"),), methods=tuple(every)).to_dict()
    cells = table1_cells(cfg, "B", "A")
    runs = [RunRecord(f"{m}{s}", s, cells[m], {}, {"sampled": {"ndcg@10": v}})
            for m, vs in every.items() for s, v in enumerate(vs)]
    return [c for c in claims(runs, cfg) if {c["ours"], c["theirs"]} <= values.keys()]


@pytest.mark.parametrize("noise, verdict", [((0.40, 0.41, 0.39), "holds, level"),
                                            ((0.30, 0.33, 0.29), "holds, below the target alone"),
                                            ((0.41, 0.41, 0.41), "holds within noise (above"),
                                            ((0.47, 0.48, 0.46), "fails")])
def test_the_negative_control_must_fall_to_the_target_alone(noise, verdict):
    """HeteroCDR on pure noise holds the control when it is not ahead of DMF (paired, 3 seeds), and the
    verdict says whether it is level with DMF or clearly below it; clearly ahead on every seed, it fails."""
    (c,) = _claims({"DMF": (0.40, 0.42, 0.40), "Noise (control)": noise})
    assert c["relation"] == "not above" and c["verdict"].startswith(verdict)


@pytest.mark.parametrize("s_values, at_least, beats", [
    ((0.43, 0.45, 0.42), "holds", "holds"),                                   # ahead on every seed, p = 0.015
    ((0.42, 0.43, 0.41), "holds", "not shown"),                               # ahead on every seed, p = 0.057
    ((0.405, 0.415, 0.395), "holds within noise", "not shown"),               # below on the mean, not significantly
    ((0.30, 0.31, 0.29), "fails", "fails")])
def test_sjlt_against_jlt_is_judged_as_at_least_and_as_the_papers_significant_boost(s_values, at_least, beats):
    got = {c["relation"]: c["verdict"] for c in _claims({"PriCDR-J": (0.40, 0.42, 0.40), "PriCDR-S": s_values})}
    assert got[">="].startswith(at_least) and got["beats"].startswith(beats)


def test_certificates_table_shows_an_unbounded_per_user_epsilon_as_infinity():
    """A release calibrated to a large per-rating ε can have no finite bound per user row: the
    certificate stores 'inf' and the report prints ∞ (the quick run's tight ε = 64 release)."""
    from privrec.experiments.pricdr_report import true_epsilons, user_epsilon

    cert = {"guarantee": {"epsilon": 64.0, "delta": 1e-5, "paper_claim": {"epsilon": 2132.06},
                          "related": [{"unit_of_privacy": "one user's whole row (up to 40 ratings)", "epsilon": "inf"}]}}
    assert user_epsilon(cert) == "inf" and true_epsilons({"r": cert})["r"] == (2132.06, 64.0, "inf", 1e-5)
    from privrec.experiments.report import fmt_num
    assert [fmt_num(v, ".3g") for v in (None, "inf", 0.31856)] == ["–", "∞", "0.319"]


@pytest.mark.parametrize("j_values, verdict", [((0.45, 0.47, 0.45), "holds"),   # +0.05 on every seed, no spread
                                               ((0.41, 0.41, 0.39), "not shown (p ≥ 0.05)"),
                                               ((0.39, 0.40, 0.38), "fails (significantly behind)")])   # p = 0.038
def test_a_release_is_judged_against_the_same_model_on_pure_noise(j_values, verdict):
    """PriCDR-J must beat HeteroCDR trained on noise of the release's shape (paired, p < 0.05) to carry the
    source's signal; significantly behind it fails, otherwise it is not shown."""
    (c,) = _claims({"PriCDR-J": j_values, "Noise (control)": (0.40, 0.42, 0.40)})
    assert (c["ours"], c["theirs"], c["relation"]) == ("PriCDR-J", "Noise (control)", "beats")
    assert c["verdict"] == verdict


def test_no_privacy_verdict_where_the_gate_fails():
    """Without transfer (HeteroCDR on the raw source not ahead of DMF) a release's claims get no verdict; the
    controls themselves are still judged."""
    got = _claims({"PriCDR-J": (0.45, 0.47, 0.45), "Noise (control)": (0.40, 0.42, 0.40), "DMF": (0.40, 0.42, 0.40),
                   "HeteroCDR-raw": (0.40, 0.41, 0.41)})
    by = {(c["ours"], c["theirs"]): c["verdict"] for c in got}
    assert by[("PriCDR-J", "Noise (control)")] == "no verdict: the non-private model shows no transfer on this testbed"
    assert by[("HeteroCDR-raw", "DMF")] == "not shown (p ≥ 0.05)"
