import numpy as np
import pandas as pd
import pytest

from privrec.data.atomic import parse_header, read_atomic, write_atomic
from privrec.errors import DataFormatError, EmptyDataError


def test_round_trip_all_field_types(tmp_path):
    frame = pd.DataFrame({
        "user_id": ["a", "b"], "score": [1.5, 2.0],
        "tags": [["x", "y"], []], "vec": [np.array([0.5, 1.0]), np.array([2.0])],
    })
    types = {"user_id": "token", "score": "float", "tags": "token_seq", "vec": "float_seq"}
    path = write_atomic(frame, tmp_path / "t.item", types)
    back, got_types = read_atomic(path)
    assert got_types == types
    assert back["user_id"].tolist() == ["a", "b"]
    assert back["score"].tolist() == [1.5, 2.0]
    assert back["tags"].tolist() == [["x", "y"], []]
    np.testing.assert_array_equal(back["vec"][0], [0.5, 1.0])


def test_tokens_stay_strings_and_crlf_is_stripped(tmp_path):
    path = tmp_path / "x.inter"
    path.write_bytes(b"user_id:token\titem_id:token\trating:float\r\n007\tNA\t5\r\n1\t2\t3\r\n")
    frame, _ = read_atomic(path)
    assert frame["user_id"].tolist() == ["007", "1"]      # leading zeros kept
    assert frame["item_id"].tolist() == ["NA", "2"]       # "NA" is a token, not a missing value
    assert frame["rating"].tolist() == [5.0, 3.0]


@pytest.mark.parametrize("header,needle", [
    ("user_id\titem_id:token\n", "not of the form name:type"),
    ("user_id:token\titem_id:tokn\n", "unknown type 'tokn'"),
    ("user_id:token\tuser_id:token\n", "twice"),
    ("\n", "header line is empty"),
])
def test_bad_headers_are_named(tmp_path, header, needle):
    path = tmp_path / "bad.inter"
    path.write_text(header + "a\tb\n")
    with pytest.raises(DataFormatError, match=needle):
        read_atomic(path)


def test_empty_file_and_header_only(tmp_path):
    empty = tmp_path / "e.inter"
    empty.write_text("")
    with pytest.raises(EmptyDataError, match="empty"):
        read_atomic(empty)
    only = tmp_path / "h.inter"
    only.write_text("user_id:token\titem_id:token\n")
    with pytest.raises(EmptyDataError, match="no data rows"):
        read_atomic(only)


def test_non_numeric_float_names_field_and_line(tmp_path):
    path = tmp_path / "r.inter"
    path.write_text("user_id:token\trating:float\nu1\t4\nu2\tfive\n")
    with pytest.raises(DataFormatError, match=r"rating:float.*'five'.*line 3"):
        read_atomic(path)


def test_missing_required_field(tmp_path):
    path = tmp_path / "m.inter"
    path.write_text("user_id:token\trating:float\nu1\t4\n")
    with pytest.raises(DataFormatError, match="item_id"):
        read_atomic(path, usecols=["user_id", "item_id"])


def test_write_is_atomic_on_error(tmp_path):
    path = tmp_path / "out.inter"
    path.write_text("old content\n")
    bad = pd.DataFrame({"user_id": ["a\tb"]})
    with pytest.raises(DataFormatError, match="tab or newline"):
        write_atomic(bad, path, {"user_id": "token"})
    assert path.read_text() == "old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.inter"]     # no temp file left behind


def test_parse_header_keeps_colons_in_names():
    assert parse_header("a:b:token\tc:float") == {"a:b": "token", "c": "float"}


def test_atomic_outputs_get_normal_permissions(tmp_path):
    import os
    import stat

    from privrec.utils.io import atomic_dir, write_text_atomic

    umask = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "report") as tmp:
            (tmp / "a.md").write_text("x")
        write_text_atomic(tmp_path / "f.txt", "y")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "report").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o644


def test_temporaries_of_a_killed_writer_are_removed_by_the_next_write(tmp_path):
    import subprocess
    import sys

    from privrec.utils.io import atomic_dir, clean_stale, write_text_atomic

    target = tmp_path / "out.csv"
    code = ("import os, signal, sys\nfrom privrec.utils.io import atomic_path, atomic_dir\n"
            f"with atomic_path({str(target)!r}) as tmp:\n    tmp.write_bytes(b'x' * 1000)\n"
            f"    with atomic_dir({str(tmp_path / 'rep')!r}) as d:\n        (d / 'a').write_text('a')\n"
            "        os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == -9
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len(left) == 2 and all(n.endswith(".tmp") for n in left)          # what a SIGKILL leaves
    from privrec.utils.io import writer_tag

    live = tmp_path / f".out.csv.{writer_tag()}.abc.tmp"                      # a live writer's file is kept
    live.write_text("in progress")
    write_text_atomic(target, "done")
    with atomic_dir(tmp_path / "rep") as d:
        (d / "b").write_text("b")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "out.csv", "rep"])
    # a folder killed between atomic_dir's two renames comes back before anything else happens
    dead = tmp_path / f".rep.{writer_tag().split('-')[0]}-999999999.old"      # its writer (no such pid) is gone
    (tmp_path / "rep").rename(dead)
    clean_stale(tmp_path / "rep")
    assert [p.name for p in (tmp_path / "rep").iterdir()] == ["b"] and not dead.exists()


def test_a_binary_file_is_refused_as_not_text(tmp_path):
    from privrec.data.atomic import read_atomic
    from privrec.errors import DataFormatError

    path = tmp_path / "x.inter"
    path.write_bytes(b"user_id:token\titem_id:token\n\xff\xfe\x00\x81\n")
    with pytest.raises(DataFormatError, match="not UTF-8 text"):
        read_atomic(path)
    path.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(DataFormatError, match="not UTF-8 text"):
        read_atomic(path)
