"""No hostile or careless input ends in "internal error" (issue 76, item 4): every case is one line
naming the bad value and the fix, and resource guards refuse before allocating."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privrec.cli import main


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"user_id": f"u{u}", "item_id": f"i{i}", "rating": float(rng.integers(1, 6)), "timestamp": float(1e9 + t)}
            for u in range(30) for t, i in enumerate(rng.choice(60, 12, replace=False))]
    path = tmp_path / "x.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("args,needle", [
    (["publish", "jlt", "{x}", "-o", "{t}/r", "--epsilon", "1", "--n-prime", "1000000000000"], "more than this machine's"),
    (["publish", "sdp", "{x}", "-o", "{t}/r", "--epsilon", "1", "--max-len", "1000000000"], "choose a smaller --max-len"),
    (["train", "sasrec", "--dataset", "{x}", "--protocol", "raw", "--max-len", "1000000000", "--out", "{t}/o"],
     "choose a smaller --max-len"),
    (["train", "sasrec", "--dataset", "{x}", "--protocol", "raw", "--ks", "1000000000000", "--out", "{t}/o"],
     "choose k <= 60"),
    (["train", "sasrec", "--dataset", "{x}", "--protocol", "raw", "--seeds", "99999999999999999999", "--out", "{t}/o"],
     "too large"),
    (["guarantee", "sjlt", "--q", "0"], "--q (the SJLT's density) must be a probability"),
])
def test_one_line_refusals_before_any_allocation(csv_file, tmp_path, capsys, args, needle):
    args = [a.replace("{x}", str(csv_file)).replace("{t}", str(tmp_path)) for a in args]
    assert main(args) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]       # (after the data's one-line summary)
    assert last.startswith("error: ") and needle in last and "internal error" not in last, last
    assert not (tmp_path / "r").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize("scale,needle", [(1e6, "not Unix seconds"), (None, "not Unix seconds")])
def test_dataset_info_on_timestamps_that_are_not_unix_seconds(csv_file, tmp_path, capsys, scale, needle):
    frame = pd.read_csv(csv_file)
    frame["timestamp"] = frame["timestamp"] * scale if scale else -1e300
    frame.to_csv(tmp_path / "t.csv", index=False)
    assert main(["datasets", "info", str(tmp_path / "t.csv")]) == 0
    assert needle in capsys.readouterr().out


def test_a_csv_naming_a_column_twice_is_refused(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("user_id,item_id,item_id,timestamp\nu1,a,b,1\nu1,c,d,2\n")
    assert main(["datasets", "info", str(tmp_path / "d.csv")]) == 2
    assert "names 'item_id' more than once" in capsys.readouterr().err


def test_released_ids_that_look_missing_read_back_as_ids(tmp_path):
    from privrec.release.tables import read_table

    (tmp_path / "r.csv").write_text("user_id,item_id,position\nNA,null,1\nnan,NaN,2\n")
    frame = read_table(tmp_path / "r.csv")
    assert frame["user_id"].tolist() == ["NA", "nan"] and frame["item_id"].tolist() == ["null", "NaN"]


def test_damaged_progress_lines_are_redone_not_crashed_on(tmp_path):
    from privrec.experiments.runner import load_progress

    good = {"key": "k1", "seed": 0, "labels": {}, "fit": {"epochs": 1}, "metrics": {"full": {"ndcg@10": 0.1}}}
    lines = [json.dumps({"fingerprint": "fp", "key": "k0", "run": {}}),
             json.dumps({"fingerprint": "fp", "key": "k2", "run": {**good, "key": "k2",
                                                                    "metrics": {"full": {"ndcg@10": "high"}}}}),
             json.dumps({"fingerprint": "fp", "key": "k1", "run": good})]
    path = tmp_path / "o.progress.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"fingerprint": "fp", "key": "k3"\xff}\n')
    assert list(load_progress(path, "fp")) == ["k1"]


def test_rr_refuses_items_without_titles_instead_of_embedding_their_ids(csv_file, tmp_path, capsys):
    """Numeric ids are not text: embedding 'i17' with MiniLM would give alternatives that mean nothing."""
    assert main(["publish", "rr", str(csv_file), "-o", str(tmp_path / "r"), "--epsilon", "1"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "neither titles" in last and "embeddings" in last and not (tmp_path / "r").exists()
