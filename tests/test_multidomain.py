"""N-domain data with disjoint users and items (PFCR's setting)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privrec.data.crossdomain import split_by_column, split_by_item
from privrec.data.interactions import Interactions
from privrec.data.multidomain import assign_users, build_disjoint
from privrec.errors import DataFormatError, ParameterError


def _tables(seed=0):
    """Three platforms; users u0..u29 are on all three with 4..12 interactions each."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(30):
        for dom in "ABC":
            for t, i in enumerate(rng.choice(25, int(rng.integers(4, 13)), replace=False)):
                rows.append({"user_id": f"u{u}", "item_id": f"{dom}{i}", "timestamp": float(t), "domain": dom})
    frame = pd.DataFrame(rows)
    return [Interactions.from_frame(frame[frame.domain == d].reset_index(drop=True), name=d) for d in "ABC"]


def _tokens(domain):
    return set(domain.users.tokens[1:].astype(str))


def test_users_end_up_on_one_platform_each_where_they_have_enough_history():
    tables = _tables()
    data = build_disjoint(tables, min_user=5, min_item=1, seed=3)
    assert data.names == ("A", "B", "C")
    a, b, c = (_tokens(d) for d in data.domains)
    assert not (a & b) and not (a & c) and not (b & c)
    # each user kept where it has >= 5 rows; nobody with >= 5 rows somewhere is lost
    counts = {(t.name, tok): n for t in tables for tok, n in
              zip(t.users.tokens[1:].astype(str), np.bincount(t.user, minlength=len(t.users.tokens))[1:])}
    for d in data.domains:
        for tok in _tokens(d):
            assert counts[(d.name, tok)] >= 5
    assert len(a | b | c) == 30
    assert sum(data.params["user_overlap"].values()) == 2 * 30     # every user was on all three
    for d in data.domains:                                          # items stay in their own domain
        assert all(str(t).startswith(d.name) for t in d.items.tokens[1:])
        assert d.split.kind == "leave_one_out" and d.sequences.n_rows == d.n_users + 1


def test_assignment_is_seeded():
    one = [_tokens(d) for d in build_disjoint(_tables(), min_item=1, seed=1).domains]
    again = [_tokens(d) for d in build_disjoint(_tables(), min_item=1, seed=1).domains]
    other = [_tokens(d) for d in build_disjoint(_tables(), min_item=1, seed=2).domains]
    assert one == again and one != other


def test_overlapping_users_kept_everywhere_when_not_made_disjoint():
    data = build_disjoint(_tables(), min_user=3, min_item=1, disjoint_users=False)
    assert all(d.n_users == 30 for d in data.domains)
    assert data.params["user_overlap"] == {"A": 0, "B": 0, "C": 0}


def test_assign_users_falls_back_when_no_domain_has_enough():
    tables = _tables()
    out, lost = assign_users(tables, min_user=100, seed=0)       # nobody reaches 100: owner drawn among all
    assert sum(len(set(t.user.tolist())) for t in out) == 30 and sum(lost) == 60


def test_bad_inputs_are_named():
    tables = _tables()
    with pytest.raises(ParameterError, match="at least two"):
        build_disjoint(tables[:1])
    with pytest.raises(ParameterError, match="names must differ"):
        build_disjoint([tables[0], tables[0]])
    with pytest.raises(ParameterError, match="min_user"):
        build_disjoint(tables, min_user=2)


def test_split_by_item_takes_any_number_of_domains():
    frame = pd.concat([pd.DataFrame({"user_id": ["u1"] * 3, "item_id": ["x", "y", "z"], "timestamp": [1.0, 2, 3],
                                     "domain": ["p", "q", "r"]})])
    inter = Interactions.from_frame(frame, name="all")
    rule = np.zeros(len(inter.items.tokens), dtype=np.int64)
    rule[1:] = [0, 1, 2]
    parts = split_by_item(inter, rule, ("P", "Q", "R"))
    assert [p.name for p in parts] == ["P", "Q", "R"] and [len(p) for p in parts] == [1, 1, 1]
    rule[1] = 3
    with pytest.raises(ParameterError, match="0..2"):
        split_by_item(inter, rule, ("P", "Q", "R"))
    with pytest.raises(DataFormatError, match="exactly two"):
        split_by_column(frame, "domain")
