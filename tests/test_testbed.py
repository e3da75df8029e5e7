"""Transfer testbeds (privrec.data.testbed), the positive-control gate and the information controls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privrec.data import testbed as T
from privrec.data.crossdomain import build, split_by_column
from privrec.data.interactions import Interactions
from privrec.data.multidomain import build_disjoint
from privrec.data.sequences import Sequences
from privrec.errors import ParameterError
from privrec.experiments import gate as G


def _shared(n_users: int = 30, per: int = 9) -> object:
    rng = np.random.default_rng(0)
    rows = [(f"u{u}", f"{d}{rng.integers(0, 40)}", t, d) for u in range(n_users) for d in "AB" for t in range(per)]
    frame = pd.DataFrame(rows, columns=["user_id", "item_id", "timestamp", "domain"])
    frame["timestamp"] = frame.groupby("user_id").cumcount()
    a, b = split_by_column(frame, "domain")
    return build(a, b, min_user=3, min_item=1)


def test_registry_and_validation():
    assert T.get("dense").dense and T.get("cold3").k == 3 and T.get("cold3").cold_share == T.COLD_SHARE
    assert set(T.TESTBEDS) == {"dense", "cold0", "cold1", "cold3", "cold5"}
    with pytest.raises(ParameterError, match="unknown testbed"):
        T.get("sparse")
    with pytest.raises(ParameterError, match="k"):
        T.Testbed("x", -1, 0.5)
    with pytest.raises(ParameterError, match="cold_share"):
        T.Testbed("x", 1, 1.0)


def test_cold_users_are_a_seeded_share_of_the_long_enough_rows():
    lengths = np.array([0, 2, 5, 6, 9, 3, 7, 8, 12, 1, 5])
    bed = T.Testbed("t", 3, 0.5, seed=4)
    mask = T.cold_users(lengths, bed)
    eligible = np.flatnonzero(lengths >= 5)
    assert not mask[0] and set(np.flatnonzero(mask)) <= set(eligible)
    assert mask.sum() == round(0.5 * len(eligible))
    assert np.array_equal(mask, T.cold_users(lengths, bed))                        # same seed, same users
    assert not T.cold_users(lengths, T.get("dense")).any()


def test_cold_split_keeps_the_first_k_items_then_validation_then_test():
    seqs = Sequences.from_rows([[], [1, 2, 3, 4, 5, 6], [7, 8, 9, 10], [11, 12, 13]])
    cold = np.array([False, True, False, True])
    cut, split = T.cold_split(seqs, cold, 1)
    assert [list(cut.row(u)) for u in range(4)] == [[], [1, 2, 3], [7, 8, 9, 10], [11, 12, 13]]
    assert [list(split.train.row(u)) for u in range(4)] == [[], [1], [7, 8, 9, 10], [11]]
    assert [list(split.valid.row(u)) for u in range(4)] == [[], [2], [], [12]]
    assert [list(split.test.row(u)) for u in range(4)] == [[], [3], [], [13]]
    assert list(split.eval_users("test")) == [1, 3]                    # warm users are not evaluated
    _, strict = T.cold_split(seqs, cold, 0)                            # k = 0: no target item in training
    assert list(strict.train.row(1)) == [] and list(strict.valid.row(1)) == [1] and list(strict.test.row(1)) == [2]


def test_keep_last_and_random_choose_which_k_plus_2_items_a_cold_row_keeps():
    seqs = Sequences.from_rows([[], [1, 2, 3, 4, 5, 6], [7, 8, 9, 10]])
    cold = np.array([False, True, False])
    last, split = T.cold_split(seqs, cold, 1, "last")
    assert list(last.row(1)) == [4, 5, 6] and list(split.train.row(1)) == [4] and list(split.test.row(1)) == [6]
    rand, split = T.cold_split(seqs, cold, 2, "random", seed=3)
    kept = list(rand.row(1))
    assert len(kept) == 4 and kept == sorted(kept) and set(kept) <= {1, 2, 3, 4, 5, 6}    # time order kept
    assert list(split.test.row(1)) == kept[-1:] and list(split.valid.row(1)) == kept[-2:-1]
    assert list(rand.row(2)) == [7, 8, 9, 10]
    assert list(T.cold_split(seqs, cold, 2, "random", seed=3)[0].row(1)) == kept          # seeded
    draws = {tuple(T.cold_split(seqs, cold, 2, "random", seed=s)[0].row(1)) for s in range(30)}
    assert len(draws) > 5                                                                    # not always the same
    with pytest.raises(ParameterError, match="keep"):
        T.Testbed("x", 1, 0.5, keep="middle")


def test_apply_shared_cuts_only_the_target_and_records_the_testbed():
    data = _shared()
    cut = T.apply_shared(data, "A", T.Testbed("first3", 3, T.COLD_SHARE, keep="first"))
    assert T.apply_shared(data, "A", "dense") is data
    assert cut.domain("B") is data.domain("B") and cut.users is data.users
    a, full = cut.domain("A"), data.domain("A")
    cold = np.flatnonzero(a.split.test.lengths > 0)
    assert len(cold) == round(T.COLD_SHARE * data.n_users) == cut.params["testbed"]["cold_users"]
    for u in cold:
        assert list(a.sequences.row(u)) == list(full.sequences.row(u)[:5])
        assert list(a.split.train.row(u)) == list(full.sequences.row(u)[:3])
    warm = np.setdiff1d(np.arange(1, data.n_users + 1), cold)
    for u in warm:
        assert list(a.split.train.row(u)) == list(full.sequences.row(u))
    stats = T.shared_statistics(cut, "A")
    assert [s["role"] for s in stats] == ["target", "auxiliary"] and stats[0]["eval_users"] == len(cold)
    assert stats[0]["interactions"] == 5 * len(cold) + full.sequences.lengths[warm].sum()


def _platforms():
    rows = [(f"{d}{u}", f"{d}i{(u * 3 + t) % 25}", t, d) for d in "AB" for u in range(30) for t in range(8)]
    frame = pd.DataFrame(rows, columns=["user_id", "item_id", "timestamp", "domain"])
    tables = [Interactions.from_frame(frame[frame.domain == d].reset_index(drop=True), name=d) for d in "AB"]
    return build_disjoint(tables, min_user=3, min_item=1, disjoint_users=False)


def test_apply_platforms_cuts_each_target_on_its_own_and_noise_partners_keep_the_shape():
    data = _platforms()
    cut = T.apply_platforms(data, data.names, "cold1")
    assert [s["target"] for s in cut.params["testbed"]] == ["A", "B"]
    for d in cut.domains:
        assert (d.split.test.lengths > 0).sum() == round(T.COLD_SHARE * d.n_users)
    with pytest.raises(ParameterError, match="no platform"):
        T.apply_platforms(data, ["C"], "cold1")
    noisy = T.noise_partners(cut, "A", seed=0)
    assert noisy.domain("A") is cut.domain("A")
    b, nb = cut.domain("B"), noisy.domain("B")
    assert np.array_equal(b.sequences.indptr, nb.sequences.indptr)
    assert np.array_equal(b.split.test.indptr, nb.split.test.indptr)
    assert not np.array_equal(b.sequences.items, nb.sequences.items)
    assert nb.sequences.items.min() >= 1 and nb.sequences.items.max() <= b.n_items
    again = T.noise_partners(cut, "A", seed=0).domain("B")
    assert np.array_equal(again.sequences.items, nb.sequences.items)


def test_noise_rows_keep_the_release_shape_and_padding():
    from privrec.release.crossdomain import domain_rows, noise_rows

    data = _shared()
    rows, noise = domain_rows(data, "B", 10), noise_rows(data, "B", 10, seed=3)
    assert noise.shape == rows.shape and np.array_equal(noise > 0, rows > 0)
    assert noise.max() <= data.domain("B").n_items and not np.array_equal(noise, rows)
    assert np.array_equal(noise, noise_rows(data, "B", 10, seed=3))


def _check(diffs: list[float]) -> dict:
    from privrec.experiments.stats import paired

    return paired({s: 0.5 + d for s, d in enumerate(diffs)}, {s: 0.5 for s in range(len(diffs))}).to_dict()


def test_gate_needs_both_controls_ahead_at_p_below_alpha():
    vals = {"X": {0: 0.30, 1: 0.32, 2: 0.31}, "single": {0: 0.20, 1: 0.21, 2: 0.20},
            "noise": {0: 0.25, 1: 0.26, 2: 0.24}}
    g = G.gate("A ← B", "m", vals, "X", "single", "noise")
    assert g.passed and g.verdict == "gate passed: the testbed carries transfer"
    flat = G.gate("A ← B", "m", {**vals, "noise": {0: 0.30, 1: 0.33, 2: 0.30}}, "X", "single", "noise")
    assert not flat.passed and flat.verdict.startswith(G.NO_TRANSFER) and "X vs noise" in flat.verdict
    missing = G.gate("A ← B", "m", {k: v for k, v in vals.items() if k != "noise"}, "X", "single", "noise")
    assert not missing.passed and "no paired runs of X with noise" in missing.verdict
    one_seed = G.gate("A ← B", "m", {k: {0: v[0]} for k, v in vals.items()}, "X", "single", "noise")
    assert not one_seed.passed and not one_seed.decided and one_seed.verdict == G.TOO_FEW
    assert G.claim_verdict(_check([0.02, 0.03, 0.02]), [one_seed.to_dict()], "A ← B") == G.TOO_FEW
    two = {k: {s: v[s] for s in (0, 1)} for k, v in vals.items()}     # two seeds: a pass counts, a failure is not yet
    assert G.gate("A ← B", "m", {**two, "X": {0: 0.30, 1: 0.33}}, "X", "single", "noise").verdict == G.NOT_YET
    weak = G.gate("A ← B", "m", {**two, "X": {0: 0.30, 1: 0.33}}, "X", "single", "noise")
    assert not weak.decided and G.claim_verdict(_check([0.02, 0.03]), [weak.to_dict()], "A ← B") == G.NOT_YET
    even = G.gate("A ← B", "m", {"X": {0: 0.30, 1: 0.31}, "single": {0: 0.20, 1: 0.21},
                                 "noise": {0: 0.25, 1: 0.26}}, "X", "single", "noise")
    assert even.passed and even.decided                  # equal non-zero differences on both seeds: significant
    gates = [g.to_dict()]
    assert G.claim_verdict(_check([0.02, 0.03, 0.02]), gates, "A ← B") == "holds"
    assert G.claim_verdict(_check([0.02, -0.03, 0.02]), gates, "A ← B") == "not shown (p ≥ 0.05)"
    assert G.claim_verdict(_check([-0.02, -0.03, -0.02]), gates, "A ← B") == "fails (significantly behind)"
    assert G.claim_verdict(_check([0.05, 0.05, 0.05]), gates, "A ← B") == "holds"      # no spread, all ahead
    assert G.claim_verdict(_check([0.02, 0.03, 0.02]), [flat.to_dict()], "A ← B") == G.NO_TRANSFER
    assert "Positive-control gate" in "\n".join(G.markdown(gates))
    # a claim on metric m is judged by m's gate where the report gates each metric; without one, by all of them
    other = G.gate("A ← B", "n", {**vals, "noise": {0: 0.30, 1: 0.33, 2: 0.30}}, "X", "single", "noise").to_dict()
    assert G.claim_verdict(_check([0.02, 0.03, 0.02]), [g.to_dict(), other], "A ← B", "m") == "holds"
    assert G.claim_verdict(_check([0.02, 0.03, 0.02]), [g.to_dict(), other], "A ← B", "n") == G.NO_TRANSFER
    assert G.claim_verdict(_check([0.02, 0.03, 0.02]), [g.to_dict(), other], "A ← B") == G.NO_TRANSFER


def test_sdp_kept_share_and_its_inverse():
    from privrec.privacy import sdp

    assert sdp.kept_share(10.0, 2194) == pytest.approx(np.exp(10) / (np.exp(10) + 2194))
    assert sdp.kept_share(800.0, 5) == 1.0 and sdp.kept_share(1e-9, 10**6) == pytest.approx(1e-6, rel=1e-3)
    for share in (0.085, 0.27):
        assert sdp.kept_share(sdp.epsilon_for_kept(share, 2194), 2194) == pytest.approx(share)
    with pytest.raises(ParameterError):
        sdp.epsilon_for_kept(1.0, 10)


def test_a_federation_bundle_carries_the_testbed_split(tmp_path):
    from privrec.flower.bundle import FederationConfig, write_bundle

    data = T.apply_platforms(_platforms(), ["A", "B"], "cold1")
    model = dict(hidden=8, heads=1, layers=1, n_codebooks=2, n_centroids=4)
    codes = [np.vstack([np.full((1, 2), -1), np.arange(2 * d.n_items).reshape(d.n_items, 2) % 4]) for d in data.domains]
    b = write_bundle(tmp_path / "fed", [(d.name, d.split, c) for d, c in zip(data.domains, codes)],
                     FederationConfig(model=model))
    split, _ = b.domain(0)
    want = data.domain("A").split
    for part in ("train", "valid", "test"):
        assert np.array_equal(getattr(split, part).items, getattr(want, part).items)
        assert np.array_equal(getattr(split, part).indptr, getattr(want, part).indptr)


def test_transfer_probe_finds_what_only_the_auxiliary_domain_knows():
    """User 1 has no target history; only its auxiliary row (item 1, as users 2-4) says it likes what they like
    (target item 5). Popularity puts item 1 first; the user-kNN through the auxiliary rows puts item 5 first."""
    from privrec.data.splits import Split
    from privrec.evaluation.transfer_probe import probe, rows_matrix

    train = Sequences.from_rows([[], [], [5], [5], [5, 1], [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]])
    empty = Sequences.from_rows([[]] * 8)
    test = Sequences.from_rows([[], [5], [], [], [], [], [], []])
    split = Split(train, empty, test, "hand-made", {})
    aux = np.array([[0], [1], [1], [1], [1], [2], [2], [2]])
    assert (rows_matrix(aux, 2).toarray() == rows_matrix(Sequences.from_rows([[], [1], [1], [1], [1], [2], [2], [2]]),
                                                        2).toarray()).all()
    noise = np.random.default_rng(0).standard_normal((8, 3))
    res = probe(split, 5, {"raw": rows_matrix(aux, 2), "noise": noise}, k=1,
                pairs=(("through raw", "popularity"),))
    assert res["users"] == 1
    assert res["rankers"]["through raw"] == {"hr@1": 1.0, "ndcg@1": 1.0}
    assert res["rankers"]["popularity"]["hr@1"] == 0.0 and res["rankers"]["own-domain"]["hr@1"] == 0.0
    assert res["pairs"][0]["difference"] == 1.0 and res["pairs"][0]["p_value"] is None      # one user: no t


def test_the_data_level_gate_and_release_verdicts():
    def probe(raw_pop, raw_noise, rel):
        pair = lambda a, b, d, p: {"ours": a, "theirs": b, "difference": d, "p_value": p}
        return {"rankers": {"through raw": {"hr@10": 0.2, "ndcg@10": 0.10}, "through noise": {"hr@10": 0.1, "ndcg@10": 0.05},
                            "through R": {"hr@10": 0.1, "ndcg@10": 0.05 + rel[0]}},
                "pairs": [pair("through raw", "popularity", *raw_pop), pair("through raw", "through noise", *raw_noise),
                          pair("through R", "through noise", *rel)]}

    good = probe((0.04, 1e-9), (0.05, 1e-9), (0.02, 1e-4))
    assert G.data_gate(good) and G.probe_verdict(good, good["pairs"][2]) == "keeps transfer"
    assert G.kept_share(good, good["pairs"][2]) == "40%" and G.kept_share(good, good["pairs"][0]) == "–"
    weak = probe((0.04, 1e-9), (0.05, 1e-9), (0.001, 0.6))
    assert G.probe_verdict(weak, weak["pairs"][2]).startswith("keeps none measurable")
    flat = probe((0.04, 1e-9), (0.001, 0.7), (0.02, 1e-4))
    assert not G.data_gate(flat) and G.probe_verdict(flat, flat["pairs"][2]).startswith("no verdict")
    assert G.probe_verdict(flat, flat["pairs"][1]) == "data-level gate failed"
    assert "verdict (data level)" in "\n".join(G.probe_markdown({"A ← B": {**good, "users": 3}}))


def test_results_gates_sets_reports_of_several_testbeds_side_by_side(tmp_path):
    import json

    from click.testing import CliRunner

    from privrec.cli import cli, main

    vals = {"X": {0: 0.30, 1: 0.32, 2: 0.31}, "single": {0: 0.20, 1: 0.21, 2: 0.20}, "noise": {0: 0.25, 1: 0.26, 2: 0.24}}
    files = []
    for bed, shift in (("dense", 0.0), ("cold3", 0.2)):
        v = {**vals, "X": {s: x + shift for s, x in vals["X"].items()}}
        g = G.gate("A ← B", "m", v, "X", "single", "noise").to_dict()
        f = tmp_path / f"{bed}.json"
        f.write_text(json.dumps({"testbed": T.get(bed).to_dict(), "gates": [g]}))
        files.append(str(f))
    res = CliRunner().invoke(cli, ["results", "gates", *files, "--plot", str(tmp_path / "g.png")])
    assert res.exit_code == 0, res.output
    assert "cold3" in res.output and "gate passed" in res.output and (tmp_path / "g.png").stat().st_size > 1000
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["results", "gates", str(bad)]) == 2
