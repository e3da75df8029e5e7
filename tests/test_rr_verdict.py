"""Known-answer checks of Mu & Lim's claim verdict (relative loss, the baselines' collapse, the score left)."""

from privrec.experiments.rr_report import drops, verdict
from privrec.experiments.runner import RunRecord


def _run(method, eps, seed, hr, ndcg):
    return RunRecord(key=f"{method}|{eps}|{seed}", seed=seed,
                     labels={"method": method, "epsilon": eps, "alternatives": None if eps is None else "injective",
                             "position": None},
                     fit={}, metrics={"sampled": {"hr@1": hr, "ndcg@5": ndcg}})


def test_verdict_relative_collapse_and_absolute():
    # seed 0 and 1; RR loses 10% (HR) and 5% (NDCG); GRU4Rec loses 50% / 20%; BERT4Rec 70% / 70%
    runs = []
    for s in (0, 1):
        runs += [_run("RR-BERT4Rec", 0.1, s, 0.20, 0.40), _run("RR-BERT4Rec", 0.0001, s, 0.18, 0.38),
                 _run("GRU4Rec", 0.1, s, 0.40, 0.50), _run("GRU4Rec", 0.0001, s, 0.20, 0.40),
                 _run("BERT4Rec", 0.1, s, 0.30, 0.50), _run("BERT4Rec", 0.0001, s, 0.09, 0.15)]
    rows = drops(runs, [0.1, 0.0001], "injective")
    lines = verdict(rows, runs, "injective")
    assert "- hr@1 (sampled): RR-BERT4Rec -10.0% vs GRU4Rec -50.0%; smaller loss in 2 of 2 paired seeds." in lines[0]
    collapse = next(line for line in lines if "collapse" in line)
    assert "fails" in collapse and "from -20.0% (GRU4Rec, ndcg@5 (sampled)) to -70.0% (BERT4Rec" in collapse
    assert ("- hr@1 (sampled) at ε = 0.0001: RR-BERT4Rec 0.1800 vs GRU4Rec 0.2000; higher in 0 of 2 paired seeds."
            in lines)
    assert ("- ndcg@5 (sampled) at ε = 0.0001: RR-BERT4Rec 0.3800 vs BERT4Rec 0.1500; higher in 2 of 2 paired seeds."
            in lines)


def test_verdict_collapse_holds_when_every_baseline_loses_two_thirds():
    runs = []
    for m in ("GRU4Rec", "BERT4Rec", "RR-BERT4Rec"):
        runs += [_run(m, 0.1, 0, 0.30, 0.30), _run(m, 0.0001, 0, 0.09 if m != "RR-BERT4Rec" else 0.27,
                                                    0.09 if m != "RR-BERT4Rec" else 0.27)]
    lines = verdict(drops(runs, [0.1, 0.0001], "injective"), runs, "injective")
    assert "holds" in next(line for line in lines if "collapse" in line)
    assert verdict([], [], "injective") == []
