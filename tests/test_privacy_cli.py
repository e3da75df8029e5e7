"""`privrec publish / guarantee / audit` on tiny files (no network)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from privrec.cli import cli
from privrec.data.atomic import read_atomic
from privrec.privacy.catalogue import AUDITS, run_audit


@pytest.fixture
def inter_file(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"user_id": f"u{u}", "item_id": f"i{i}", "rating": 4.0, "timestamp": float(t)}
            for u in range(30) for t, i in enumerate(rng.choice(60, 12, replace=False))]
    path = tmp_path / "toy.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_publish_sdp_writes_a_release_folder_that_reads_back(inter_file, tmp_path):
    from privrec.release import read_release

    out = tmp_path / "pub" / "toy-sdp"
    res = _run("publish", "sdp", str(inter_file), "-o", str(out), "--epsilon", "5", "--seed", "7", "--max-len", "10")
    assert res.exit_code == 0, res.output
    release = read_release(out)                                      # hashes verified
    assert set(release.files) == {"toy-sdp.inter", "toy-sdp.user"}
    frame, types = read_atomic(out / "toy-sdp.inter")
    assert types == {"user_id": "token", "item_id": "token", "timestamp": "float"}
    assert frame["user_id"].nunique() <= 30 and frame["timestamp"].between(1, 10).all()
    cert = release.certificate
    assert cert["guarantee"]["epsilon"] == 10.0 and cert["guarantee"]["paper_claim"]["epsilon"] == 5.0
    assert cert["randomness"]["seed"] is None and cert["randomness"]["seed_source"] == "user"   # seed not written
    again = tmp_path / "again"
    _run("publish", "sdp", str(inter_file), "-o", str(again), "--epsilon", "5", "--seed", "7", "--max-len", "10",
         "--record-seed", "--format", "csv")
    assert read_release(again).certificate["randomness"]["seed"] == 7
    a = pd.read_csv(again / "again.csv", dtype=str)
    b = frame.astype(str).assign(timestamp=frame["timestamp"].astype(float).astype(str))
    assert (a.values == b.astype(str).values).all()                  # same seed, same rows, other format


@pytest.mark.parametrize("args,needle", [
    (["--epsilon", "0"], "epsilon"), (["--epsilon", "nan"], "epsilon"), (["--epsilon", "1", "--max-len", "0"], "max_len"),
])
def test_publish_bad_parameters_write_nothing(inter_file, tmp_path, args, needle):
    from privrec.cli import main

    out = tmp_path / "never" / "x"
    code = main(["publish", "sdp", str(inter_file), "-o", str(out), *args])
    assert code == 2 and not out.exists() and not out.parent.exists()


def test_publish_jlt_outputs_users_by_n_prime(inter_file, tmp_path):
    out = tmp_path / "jlt"
    res = _run("publish", "jlt", str(inter_file), "-o", str(out), "--epsilon", "1", "--n-prime", "8", "--seed", "1")
    assert res.exit_code == 0, res.output
    frame = pd.read_parquet(out / "jlt.parquet")
    assert frame.shape == (30, 9) and frame.columns[0] == "user_id"


def test_guarantee_prints_the_true_pfcr_epsilon():
    res = _run("guarantee", "pfcr-paper", "--epsilon", "0.5", "--buckets", "64")
    assert res.exit_code == 0 and "epsilon=5.139" in res.output and "paper claims 0.5" in res.output
    res = _run("guarantee", "sdp", "--epsilon", "1", "--json")
    assert json.loads(res.output)["epsilon"] == 2.0


def test_audit_flags_the_broken_claims_and_respects_the_correct_ones():
    assert set(AUDITS) >= {"sdp", "rr", "jlt", "sjlt", "piecewise", "oue", "graph", "pfcr-paper", "pfcr-calibrated"}
    bad, _ = run_audit("pfcr-paper", 0.5, samples=20_000, seed=0)
    assert bad.violates_claim and bad.lower_bound > 3
    ok, _ = run_audit("pfcr-calibrated", 0.5, samples=20_000, seed=0)
    assert not ok.violates_claim
    res = _run("audit", "sdp", "--samples", "20000")
    assert res.exit_code == 0 and "CLAIM VIOLATED" in res.output and "true epsilon of this setting: 2" in res.output


def test_publish_features_keeps_every_user(tmp_path):
    """The README's `publish features` crashed with an off-by-one that dropped the last user."""
    import pandas as pd

    from privrec.cli import main

    frame = pd.DataFrame({"user_id": ["a", "b", "c"], "item_id": ["1", "2", "1"], "timestamp": [1.0, 2.0, 3.0]})
    users = pd.DataFrame({"user_id": ["a", "b", "c"], "age": [25.0, 35.0, 56.0], "gender": ["F", "M", "F"],
                          "occupation": [1.0, 4.0, 20.0]})
    from privrec.data.atomic import write_atomic

    write_atomic(frame, tmp_path / "d.inter", {"user_id": "token", "item_id": "token", "timestamp": "float"})
    write_atomic(users, tmp_path / "d.user", {"user_id": "token", "age": "float", "gender": "token",
                                              "occupation": "float"})
    out = tmp_path / "out" / "users"
    assert main(["publish", "features", str(tmp_path / "d.inter"), "-o", str(out), "--epsilon", "4", "--seed", "0"]) == 0
    published = pd.read_parquet(out / "users.parquet")
    assert published["user_id"].tolist() == ["a", "b", "c"]
