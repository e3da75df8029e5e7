"""Cross-domain data, DASL, and the PriCDSR pipeline (tiny synthetic tables)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from privrec.data.crossdomain import (
    build,
    load_cross_domain,
    ml1m_genre_domains,
    split_by_column,
    split_by_item,
)
from privrec.data.interactions import Interactions
from privrec.errors import DataFormatError, EmptyDataError, ParameterError, PrivrecError
from privrec.experiments import pricdsr as P
from privrec.experiments import pricdsr_report as R
from privrec.experiments.runner import RunRecord
from privrec.models.dasl import DASL
from privrec.release import tables as T
from privrec.release.crossdomain import domain_rows, perturb_domain_rows, read_domain_rows
from privrec.release.folder import read_release, write_release
from privrec.training.tasks import CrossDomainTask
from privrec.training.trainer import TrainConfig


def _table(n_users=40, n_a=200, n_b=180, per=12, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        for dom, n in (("A", n_a), ("B", n_b)):
            items = rng.choice(n, per, replace=False)
            for t, i in enumerate(items):
                rows.append({"user_id": f"u{u}", "item_id": f"{dom}{i}", "timestamp": float(t * 10 + (dom == "B")),
                             "domain": dom})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def data():
    a, b = split_by_column(_table(), "domain")
    return build(a, b, min_user=5, min_item=1)


def test_builder_shares_users_and_keeps_domains_disjoint(data):
    assert data.names == ("A", "B") and data.n_users == 40
    a, b = data.domains
    assert all(t.startswith("A") for t in a.items.tokens[1:]) and all(t.startswith("B") for t in b.items.tokens[1:])
    stats = {s["domain"]: s for s in data.statistics()}
    assert stats["A"]["interactions"] == 40 * 12 and stats["B"]["avg_seq_len"] == 12
    # publishable rows never contain the auxiliary validation/test items
    pub = data.publishable_rows("B")
    for u in (1, 7, 40):
        assert list(pub.row(u)) == list(b.sequences.row(u)[:-2])


def test_builder_errors():
    frame = _table()
    with pytest.raises(DataFormatError, match="exactly two"):
        split_by_column(frame.assign(domain="A"), "domain")
    with pytest.raises(DataFormatError, match="missing"):
        split_by_column(frame, "kind")
    a = Interactions.from_frame(frame[frame.domain == "A"], name="A")
    b = Interactions.from_frame(frame[frame.domain == "B"].assign(user_id=lambda f: "x" + f.user_id), name="B")
    with pytest.raises(EmptyDataError, match="share no user"):
        build(a, b)
    a, b = split_by_column(frame, "domain")
    with pytest.raises(EmptyDataError, match="both domains"):
        build(a, b, min_user=13)
    # a per-item domain rule must send every item with interactions to domain 0 or 1
    inter = Interactions.from_frame(frame)
    rule = np.arange(len(inter.items.tokens)) % 3
    with pytest.raises(ParameterError, match="0..1"):
        split_by_item(inter, rule, ("A", "B"))


def test_genre_split_names_movies_without_a_genre():
    inter = Interactions.from_frame(_table(n_users=6))
    feats = pd.DataFrame({"genre": [["Action"] if i % 2 else ["Drama"] for i in range(len(inter.items.tokens))]})
    feats.at[3, "genre"] = []
    feats.at[5, "genre"] = ["Musicals?"]
    inter = replace(inter, item_features=feats.iloc[1:])
    with pytest.raises(DataFormatError, match=r"\['<no genre>', 'Musicals\?'\] are not assigned"):
        ml1m_genre_domains(inter)


def test_publish_is_seeded_and_clean_without_epsilon(data):
    clean = domain_rows(data, "B", 10)
    assert (clean[1:] > 0).sum() == 40 * 10 and not clean[0].any()
    r1, g1 = perturb_domain_rows(data, "B", "sdp", 5.0, 10, 3)
    r2, _ = perturb_domain_rows(data, "B", "sdp", 5.0, 10, 3)
    assert np.array_equal(r1, r2) and not np.array_equal(r1, clean) and not r1[0].any()
    assert g1.epsilon == 10.0 and g1.claimed.epsilon == 5.0          # the honest swap guarantee is 2 eps
    with pytest.raises(ParameterError):
        perturb_domain_rows(data, "B", "sdp", 0.0, 10, 0)


def _write_rows(folder, rows, data, name=None):
    from privrec.privacy import sdp

    users = data.users.decode(np.arange(1, data.n_users + 1))
    g = sdp.guarantee(2.0, data.domain("B").n_items, rows.shape[1])       # a certificate must hold a true guarantee
    write_release(folder, lambda tmp: T.write_sequences(tmp, name or folder.name, rows[1:], users,
                                                        data.domain("B").items.tokens),
                  {"kind": "sequences", "input": {}, "mechanism": g.mechanism, "guarantee": g.to_dict(),
                   "summary": g.summary()})


def test_release_round_trip_and_bad_files(data, tmp_path):
    rows, _ = perturb_domain_rows(data, "B", "sdp", 2.0, 10, 1)
    _write_rows(tmp_path / "aux", rows, data)
    assert np.array_equal(read_domain_rows(tmp_path / "aux", data, "B", 10), rows)
    path = tmp_path / "aux" / "aux.inter"
    header = path.read_text().splitlines()[0]
    assert header == "user_id:token\titem_id:token\ttimestamp:float"
    users, items = data.users, data.domain("B").items
    lines = path.read_text().splitlines()
    # a table with users the target does not know, or lacking some
    bad = tmp_path / "bad.inter"
    bad.write_text(header + "\nstranger\tB1\t1\n")
    with pytest.raises(DataFormatError, match="unknown to the consumer"):
        T.read_sequences(bad, users, items, 10)
    (tmp_path / "half.inter").write_text("\n".join(lines[:30]) + "\n")
    with pytest.raises(DataFormatError, match="not published"):
        T.read_sequences(tmp_path / "half.inter", users, items, 10)
    # a user the mechanism left with an empty row is still published (listed in the .user file)
    rows[5] = 0
    _write_rows(tmp_path / "gap", rows, data)
    assert np.array_equal(read_domain_rows(tmp_path / "gap", data, "B", 10), rows)
    assert (tmp_path / "gap" / "gap.user").read_text().splitlines()[0] == "user_id:token"
    # two items at one position of a row; a position that is not whole
    (tmp_path / "dup.inter").write_text("\n".join(lines + [lines[1]]) + "\n")
    with pytest.raises(DataFormatError, match="same position"):
        T.read_sequences(tmp_path / "dup.inter", users, items, 10)
    (tmp_path / "frac.inter").write_text(lines[0] + "\n" + lines[1].rsplit("\t", 1)[0] + "\t1.5\n")
    with pytest.raises(DataFormatError, match="whole positions"):
        T.read_sequences(tmp_path / "frac.inter", users, items, 10)


def test_a_release_whose_files_changed_is_refused(data, tmp_path):
    from privrec.errors import ReleaseError

    rows, _ = perturb_domain_rows(data, "B", "sdp", 2.0, 10, 1)
    _write_rows(tmp_path / "rel", rows, data)
    cert = read_release(tmp_path / "rel").certificate
    assert set(cert["output"]["files"]) == {"rel.inter", "rel.user"}
    inter = tmp_path / "rel" / "rel.inter"
    inter.write_text(inter.read_text().replace("\t1\n", "\t2\n", 1))      # one position edited
    with pytest.raises(ReleaseError, match="does not match its certificate"):
        read_domain_rows(tmp_path / "rel", data, "B", 10)
    (tmp_path / "rel" / "certificate.json").unlink()
    with pytest.raises(ReleaseError, match="uncertified"):
        read_domain_rows(tmp_path / "rel", data, "B", 10)
    with pytest.raises(ReleaseError, match="a release is the folder"):
        _write_rows(tmp_path / "ok", rows, data)
        read_domain_rows(tmp_path / "ok" / "ok.inter", data, "B", 10)


def _model(data, mode, encoder="stream"):
    torch.manual_seed(0)
    return DASL(data.n_users, [d.n_items for d in data.domains], target=0, mode=mode, embedding=8, window=4,
                encoder=encoder)


@pytest.mark.parametrize("encoder", ["stream", "window"])
def test_dasl_single_never_touches_the_auxiliary_domain(data, encoder):
    task = CrossDomainTask(data, "A", domain_rows(data, "B", 10), max_len=10, window=4)
    model = _model(data, "single", encoder)
    batch = next(task.train_batches(16, np.random.default_rng(0)))
    model.loss(batch).backward()
    for name, p in model.named_parameters():
        touched = p.grad is not None and bool(p.grad.abs().sum() > 0)
        assert touched == (name.split(".")[1] == "0" if name.split(".")[0] != "attn" else name.startswith("attn.0")), name


def test_dasl_dual_attention_uses_cross_domain_states(data):
    rows = domain_rows(data, "B", 10)
    task = CrossDomainTask(data, "A", rows, max_len=10, window=4)
    model = _model(data, "dual").eval()
    users = np.arange(1, 9)
    batch = task.eval_batch("test", users)
    s1 = model.score(batch)
    assert s1.shape == (8, data.domains[0].n_items + 1) and torch.isinf(s1[:, 0]).all()
    batch["seq1"] = torch.flip(batch["seq1"], [0])                     # other users' auxiliary rows
    assert not torch.allclose(model.score(batch)[:, 1:], s1[:, 1:])
    # exact orthogonality of the dual-embedding map
    x = model.mapping.weight
    assert torch.allclose(x.T @ x, torch.eye(x.shape[0]), atol=1e-5)


@pytest.mark.parametrize("mode", ["single", "dual"])
def test_dasl_stream_pooling_matches_the_per_window_formula(data, mode):
    """The batched stream path (all windows pooled at once from strided views) equals the
    definition: per target, GRU states of its T own (and T cross) positions, one softmax over
    the real items among them, weighted sum."""
    rows = domain_rows(data, "B", 10)
    task = CrossDomainTask(data, "A", rows, max_len=10, window=4)
    model = _model(data, mode).eval()
    batch = next(task.train_batches(16, np.random.default_rng(0)))
    pick = batch["sel0"].nonzero()
    got = model.preference(0, batch, pick)
    t, uvec = model.window, model.user_emb[0](batch["user"])
    want = []
    for r, j in pick.tolist():
        states, masks = [], []
        for g in ([0] if mode == "single" else [0, 1]):
            padded = torch.nn.functional.pad(batch[f"seq{g}"][r:r + 1], (t, 0))
            full, _ = model.gru[g](model._inputs(g, padded, uvec[r:r + 1]))
            states.append(full[0, j:j + t])
            masks.append(padded[0, j:j + t] > 0)
        s, m = torch.cat(states), torch.cat(masks)
        w = torch.softmax(model.attn[0](s)[m], 0)
        want.append(w @ s[m])
    assert torch.allclose(got, torch.stack(want), atol=1e-5)
    # windows made only of padding do not poison the gradient
    model.train()
    model.loss(batch).backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_task_rejects_bad_aux_rows(data):
    with pytest.raises(ParameterError, match="shape"):
        CrossDomainTask(data, "A", np.zeros((3, 10), dtype=np.int64))
    with pytest.raises(ParameterError, match="outside"):
        CrossDomainTask(data, "A", np.full((data.n_users + 1, 10), 999))


def test_tiny_reproduction_writes_tables_plot_and_certificate(data, tmp_path):
    cfg = P.PriCDSRConfig(max_len=10, window=4, embedding=8, seeds=(0,), epsilons=(1.0, 10.0),
                          directions=("A<-B",), table3_directions=("A<-B",),
                          train=TrainConfig(epochs=1, batch_size=16, patience=1, progress=False))
    result = P.reproduce(cfg, tmp_path / "out", log=lambda m: None, data=data)
    names = {(s["variant"], s["epsilon"]) for s in result["summary"]}
    assert names == {("DASL-single", None), ("DASL", None), ("Noise (control)", None), ("PriCDSR-DASL", 10.0),
                     ("PriCDSR-DASL", 1.0)}
    assert all("ndcg@10 (sampled)" in s["test"] and "ndcg@10 (full)" in s["test"] for s in result["summary"])
    md = (tmp_path / "out" / "results.md").read_text()
    assert "Table II analog" in md and "PriCDSR-DASL (ε=10; true 20 per cell, 100 per interaction or user)" in md and "towards the auxiliary users" in md
    assert "paired by seed" in md and len(result["claim"]) == 6     # 3 references x 2 metrics
    # one seed: the gate gives no verdict, and no claim gets one
    assert "Positive-control gate" in md and not any(g["passed"] for g in result["gates"])
    assert all(c["verdict"] in (None, "no verdict yet: the gate needs at least 2 paired seeds") for c in result["claim"])
    assert (tmp_path / "out" / "privacy_utility.png").stat().st_size > 1000
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["certificates"]["B:10.0"]["guarantee"]["epsilon"] == 20.0
    # each perturbed release is on disk as a RecBole dataset folder with its certificate
    for eps in (1.0, 10.0):
        folder = tmp_path / "out.published" / f"B-eps{eps}-seed0"
        assert np.array_equal(read_domain_rows(folder, data, "B", 10), perturb_domain_rows(data, "B", "sdp", eps, 10, 0)[0])
        cert = read_release(folder).certificate
        assert cert["guarantee"]["epsilon"] == 2 * eps and f"{folder.name}.user" in cert["output"]["files"]
        assert cert["randomness"]["seed"] == 0          # research reproduction: the seed is recorded on purpose
    assert sorted(p.name for p in (tmp_path / "out.published").iterdir() if not p.name.startswith(".")) == [
        "B-eps1.0-seed0", "B-eps10.0-seed0"]
    # every run here ended at its 1-epoch cap, so each keeps its state (a higher cap continues it)
    assert len(list((tmp_path / "out.state").iterdir())) == 5 and all(s["capped"] == 1 for s in result["summary"])
    assert "† the epoch cap" in md
    # an interrupted full run continues: finished runs are read back, not retrained
    lines = (tmp_path / "out.progress.jsonl").read_text().splitlines()
    assert len(lines) == 5
    (tmp_path / "out.progress.jsonl").write_text("\n".join(lines[:4]) + "\n{cut off")
    logs = []
    stamp = {p: p.stat().st_mtime_ns for p in (tmp_path / "out.published").rglob("*")}
    again = P.reproduce(cfg, tmp_path / "out", log=logs.append, data=data)
    assert any("resuming: 4 finished runs" in m for m in logs)
    # only the run that trains again (the cut line: PriCDSR-DASL at eps 1) is re-published; finished runs'
    # releases are untouched
    assert json.loads(lines[4])["key"] == "A<-B|PriCDSR-DASL|1.0|0"
    changed = {p.relative_to(tmp_path).parts[1] for p in (tmp_path / "out.published").rglob("*")
               if stamp.get(p) != p.stat().st_mtime_ns and not p.name.startswith(".")}
    assert changed == {"B-eps1.0-seed0"}
    assert [r["metrics"] for r in again["runs"][:4]] == [r["metrics"] for r in result["runs"][:4]]
    # a seed trained in a parallel process joins through its progress file, nothing retrained
    other = P.reproduce(replace(cfg, seeds=(1,)), tmp_path / "s1", log=lambda m: None, data=data)
    logs = []
    both = P.reproduce(replace(cfg, seeds=(0, 1)), tmp_path / "out", log=logs.append, data=data,
                       add_progress=[tmp_path / "s1.progress.jsonl"])
    assert not any("] epoch" in m for m in logs)
    assert [r["metrics"] for r in both["runs"]] == [r["metrics"] for r in again["runs"] + other["runs"]]
    assert all(s["test"]["ndcg@10 (sampled)"]["n"] == 2 for s in both["summary"])
    # a partial report: finished runs only, the missing ones listed, nothing trained
    logs = []
    part = P.reproduce(replace(cfg, seeds=(0, 1, 2)), tmp_path / "part", log=logs.append, data=data,
                       add_progress=[tmp_path / "out.progress.jsonl"], train_missing=False)
    assert not any("] epoch" in m for m in logs) and len(part["missing"]) == 5
    assert all(m.endswith("|2") for m in part["missing"])
    report = (tmp_path / "part" / "results.md").read_text()
    assert "Partial report: 10 of 15 training runs finished" in report
    # the 5 missing runs priced at their methods' mean time over the finished ones
    times = {}
    for r in part["runs"]:
        times.setdefault(r["labels"]["variant"], []).append(r["fit"]["seconds"])
    want = sum(np.mean(times[k.split("|")[1]]) for k in part["missing"])
    assert part["remaining"]["runs"] == 5 and part["remaining"]["seconds"] == pytest.approx(want)
    assert "CPU-hours** (each at the mean wall time" in report
    with pytest.raises(PrivrecError, match=r"no finished runs .* all \d+ runs are missing \(.*\|5"):
        P.reproduce(replace(cfg, seeds=(5,)), tmp_path / "none", log=lambda m: None, data=data, train_missing=False)
    assert not (tmp_path / "none").exists() and not (tmp_path / "none.published").exists()
    with pytest.raises(PrivrecError, match="no such progress file"):
        P.reproduce(cfg, tmp_path / "out", log=lambda m: None, data=data, add_progress=[tmp_path / "nope"])


def test_raising_the_epoch_cap_continues_capped_runs_exactly(data, tmp_path):
    train = TrainConfig(epochs=1, batch_size=16, patience=2, progress=False)
    cfg = P.PriCDSRConfig(max_len=10, window=4, embedding=8, seeds=(0,), epsilons=(10.0,), directions=("A<-B",),
                          table3_directions=(), train=train)
    P.reproduce(cfg, tmp_path / "out", log=lambda m: None, data=data)
    longer = replace(cfg, train=replace(train, epochs=4))
    logs = []
    continued = P.reproduce(longer, tmp_path / "out", log=logs.append, data=data)
    assert sum("continued under the cap of 4" in m for m in logs) == 4
    assert any("resuming from" in m for m in logs)
    fresh = P.reproduce(longer, tmp_path / "fresh", log=lambda m: None, data=data)
    assert [r["metrics"] for r in continued["runs"]] == [r["metrics"] for r in fresh["runs"]]
    assert [r["fit"]["history"] for r in continued["runs"]] == [r["fit"]["history"] for r in fresh["runs"]]
    assert all(r["fit"]["epochs_run"] <= 4 for r in continued["runs"])
    P.reproduce(cfg, tmp_path / "quick", log=lambda m: None, data=data, keep_capped_states=False)
    assert not (tmp_path / "quick.state").exists()          # quick runs leave no resumable states behind


def _rec(variant, eps, seed, v, target="A", aux="B"):
    return RunRecord(f"{target}|{variant}|{eps}|{seed}", seed,
                     {"target": target, "aux": aux, "variant": variant, "epsilon": eps}, {}, {"sampled": {"ndcg@10": v}})


def test_claim_check_pairs_runs_by_seed():
    run = _rec
    runs = [run("DASL-single", None, 0, 0.30), run("DASL-single", None, 1, 0.20), run("DASL", None, 0, 0.40),
            run("PriCDSR-DASL", 10.0, 0, 0.35), run("PriCDSR-DASL", 10.0, 1, 0.10), run("PriCDSR-DASL", 1.0, 2, 0.9)]
    rows = R.claim_check(runs, 10.0, metrics=("ndcg@10 (sampled)",))
    single, dasl = rows
    assert single["reference"] == "DASL-single" and single["seeds"] == [0, 1]
    assert single["difference"]["values"] == pytest.approx([0.05, -0.10])
    assert single["difference"]["mean"] == pytest.approx(-0.025)
    assert single["relative"] == pytest.approx(-0.025 / 0.25) and single["ahead"] == 1
    assert dasl["seeds"] == [0] and dasl["difference"]["mean"] == pytest.approx(-0.05) and dasl["ahead"] == 0
    # paired t over two seeds: t = -0.025 / (0.10607 / sqrt 2) = -1/3, df 1 (Cauchy): p = 1 - (2/pi) atan(1/3)
    assert single["p_value"] == pytest.approx(0.7952, abs=1e-4) and dasl["p_value"] is None


def test_sweep_check_pairs_every_epsilon_and_fits_the_trend_in_log_epsilon():
    run = _rec
    runs = [run("DASL-single", None, 0, 0.30), run("DASL-single", None, 1, 0.20), run("DASL", None, 0, 0.40),
            run("PriCDSR-DASL", 1.0, 0, 0.31), run("PriCDSR-DASL", 1.0, 1, 0.19),
            run("PriCDSR-DASL", 10.0, 0, 0.33), run("PriCDSR-DASL", 100.0, 0, 0.35),
            _rec("PriCDSR-DASL", 10.0, 0, 0.9, target="B", aux="A")]   # another direction: ignored
    (s,) = R.sweep_check(runs, ("A<-B",), metrics=("ndcg@10 (sampled)",))
    assert [(c["epsilon"], c["reference"]) for c in s["paired"]] == [
        (1.0, "DASL-single"), (1.0, "DASL"), (10.0, "DASL-single"), (10.0, "DASL"), (100.0, "DASL-single"), (100.0, "DASL")]
    assert s["paired"][0]["difference"]["values"] == pytest.approx([0.01, -0.01])
    # y = 0.31, 0.19, 0.33, 0.35 at log10 eps = 0, 0, 1, 2: least squares by hand
    x, y = np.array([0.0, 0, 1, 2]), np.array([0.31, 0.19, 0.33, 0.35])
    slope = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    assert s["trend"]["slope_per_decade"] == pytest.approx(slope) and s["trend"]["runs"] == 4
    assert 0 < s["trend"]["p_value"] < 1
    assert R.sweep_check(runs[:4], ("A<-B",), metrics=("ndcg@10 (sampled)",))[0]["trend"] is None
    assert "## The ε sweep" in "\n".join(R._sweep_markdown([s])) and R._sweep_markdown([]) == []


def test_loss_rise_epoch_finds_a_blow_up_after_the_minimum_and_the_report_lists_every_run():
    def run(losses, seed=0, best=2):
        return RunRecord(f"k{seed}", seed, {"target": "A", "aux": "B", "variant": "DASL", "epsilon": None},
                         {"best_epoch": best, "epochs_run": len(losses), "stopped_early": True, "best_valid": None,
                          "history": [{"epoch": i + 1, "loss": x} for i, x in enumerate(losses)]},
                         {"sampled": {"ndcg@10": 0.3}, "full": {"ndcg@10": 0.1}})
    calm, blown = run([3.0, 1.0, 1.1, 1.19]), run([3.0, 1.0, 1.1, 1.2, 5.0], seed=1)
    early = run([3.0, 1.0, 1.3, 1.1], seed=2, best=4)         # rose at 3, recovered: best epoch 4 came after
    assert R.loss_rise_epoch(calm) is None and R.loss_rise_epoch(run([])) is None
    assert R.loss_rise_epoch(blown) == 4 and R.loss_rise_epoch(early) == 3     # epoch 1's high loss is no rise
    table = "\n".join(R._runs_markdown([blown, calm, early]))
    assert "| 1.00 → 5.00 | 4 ‡ |" in table and "| 1.00 → 1.19 | – |" in table
    assert "| 3 ‡ (before the best) |" in table


def test_bad_direction_and_epsilon_write_nothing(data, tmp_path):
    cfg = P.PriCDSRConfig(directions=("A<-C",), seeds=(0,), train=TrainConfig(epochs=1, progress=False))
    with pytest.raises(PrivrecError, match="direction"):
        P.reproduce(cfg, tmp_path / "x", log=lambda m: None, data=data)
    with pytest.raises(PrivrecError, match="epsilon"):
        P.reproduce(replace(cfg, epsilons=(-1.0,)), tmp_path / "y", log=lambda m: None, data=data)
    with pytest.raises(PrivrecError, match="seeds must be distinct"):
        P.reproduce(replace(cfg, directions=("A<-B",), seeds=(0, 0)), tmp_path / "z", log=lambda m: None, data=data)
    assert not any((tmp_path / n).exists() for n in ("x", "y", "z", "z.progress.jsonl"))


def test_load_cross_domain_from_one_file_or_two(tmp_path):
    frame = _table()
    one = tmp_path / "both.csv"
    frame.to_csv(one, index=False)
    data = load_cross_domain([str(one)], "domain", min_item=1)
    assert data.names == ("A", "B") and data.n_users == 40
    for dom in ("A", "B"):
        frame[frame.domain == dom].drop(columns="domain").to_csv(tmp_path / f"{dom.lower()}dom.csv", index=False)
    two = load_cross_domain([str(tmp_path / "adom.csv"), str(tmp_path / "bdom.csv")], min_item=1)
    assert two.names == ("adom", "bdom") and two.statistics()[1]["interactions"] == data.statistics()[1]["interactions"]
    with pytest.raises(ParameterError, match="--domain-field"):
        load_cross_domain([str(one)])
    with pytest.raises(ParameterError, match="splits one file"):
        load_cross_domain([str(tmp_path / "adom.csv"), str(tmp_path / "bdom.csv")], "domain")
    with pytest.raises(ParameterError, match="rename one"):
        load_cross_domain([str(tmp_path / "adom.csv"), str(tmp_path / "adom.csv")])
    with pytest.raises(DataFormatError, match="missing"):
        load_cross_domain([str(one)], "kind")


def test_publish_aux_cli_writes_a_recbole_release_of_train_rows_only(tmp_path):
    from click.testing import CliRunner

    from privrec.cli import cli, main

    src = tmp_path / "both.csv"
    _table(n_a=30, n_b=25).to_csv(src, index=False)
    out = tmp_path / "rel"
    res = CliRunner().invoke(cli, ["publish", "sdp", str(src), "--domain-field", "domain", "--aux", "B", "-o", str(out),
                                   "--epsilon", "3", "--seed", "4", "--max-len", "10"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    data = load_cross_domain([str(src)], "domain")
    assert np.array_equal(read_domain_rows(out, data, "B", 10), perturb_domain_rows(data, "B", "sdp", 3.0, 10, 4)[0])
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"]["epsilon"] == 6.0 and "withheld" in cert["input"]["split"]
    assert cert["randomness"]["seed"] is None and cert["randomness"]["seed_source"] == "user"   # never by default
    assert (out / "rel.user").is_file() and (out / "rel.inter").is_file()
    # unknown domain, a file name as the release, wrong mechanism: an error and nothing written
    for args in (["--aux", "C"], ["--aux", "B", "-o", str(tmp_path / "n" / "x.inter")], ["--domain-field", "domain"]):
        argv = ["publish", "sdp", str(src), "--domain-field", "domain", "-o", str(tmp_path / "n" / "x"),
                "--epsilon", "1", *args]
        assert main(argv) == 2 and not (tmp_path / "n").exists()
    assert main(["publish", "rr", str(src), "--aux", "B", "-o", str(tmp_path / "n" / "x"), "--epsilon", "1"]) == 2


def test_reproduce_cli_on_your_own_file(tmp_path):
    from click.testing import CliRunner

    from privrec.cli import cli

    src = tmp_path / "shop.csv"
    _table(n_users=60, n_a=150, n_b=150, per=30).to_csv(src, index=False)     # 100 sampled negatives fit
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["reproduce", "pricdsr", "--quick", "--data", str(src), "--domain-field", "domain",
                                   "--out", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    saved = json.loads((out / "results.json").read_text())
    assert saved["config"]["directions"] == ["A<-B", "B<-A"] and saved["config"]["dataset"].endswith("by domain")
    assert {s["variant"] for s in saved["summary"]} == {"DASL-single", "DASL", "Noise (control)", "PriCDSR-DASL"}
    assert (tmp_path / "rep.published" / "B-eps10.0-seed0" / "B-eps10.0-seed0.inter").is_file()
    assert (tmp_path / "rep.published" / "B-eps10.0-seed0" / "certificate.json").is_file()
    md = (out / "results.md").read_text()
    assert md.startswith("# PriCDSR on shop.csv by domain") and "This report was written by" in md
    # --epsilons: Table II only (ε = 10), from the runs of the quick run above (8 + ε ∈ {1, 50}): nothing retrained
    res = CliRunner().invoke(cli, ["reproduce", "pricdsr", "--quick", "--data", str(src), "--domain-field", "domain",
                                   "--out", str(out), "--epsilons", "10"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    saved = json.loads((out / "results.json").read_text())
    assert {s["epsilon"] for s in saved["summary"] if s["variant"] == "PriCDSR-DASL"} == {10.0}
    assert "resuming: 8 finished runs" in res.output and "loss" not in res.output, res.output   # this grid's 8
    from privrec.cli import main

    assert main(["reproduce", "pricdsr", "--quick", "--out", str(tmp_path / "bad"), "--epsilons", "ten"]) == 2
    assert not (tmp_path / "bad").exists()


def test_worker_processes_give_the_numbers_of_one_process(data, tmp_path):
    cfg = P.PriCDSRConfig(max_len=10, window=4, embedding=8, seeds=(0,), epsilons=(10.0,), directions=("A<-B",),
                          table3_directions=(), train=TrainConfig(epochs=2, batch_size=16, patience=1, progress=False))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                          # as each worker (threads=1)
    try:
        one = P.reproduce(cfg, tmp_path / "one", log=lambda m: None, data=data)
    finally:
        torch.set_num_threads(threads)
    logs = []
    two = P.reproduce(cfg, tmp_path / "two", log=logs.append, data=data, workers=2)
    assert any("in 2 worker processes" in m for m in logs)
    assert [r["metrics"] for r in two["runs"]] == [r["metrics"] for r in one["runs"]]
    assert [r["fit"]["history"] for r in two["runs"]] == [r["fit"]["history"] for r in one["runs"]]
    assert len((tmp_path / "two.progress.jsonl").read_text().splitlines()) == 4
    with pytest.raises(ParameterError, match="jobs"):
        P.reproduce(cfg, tmp_path / "bad", log=lambda m: None, data=data, workers=0)
