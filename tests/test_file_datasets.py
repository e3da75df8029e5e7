"""The papers' own datasets from a file (issue 77, item 1): S3Rec / SASRec text formats, registered by
name with their SHA-256, imported from a local copy and verified; real-data checks read
../shared/datasets and skip with a reason where it is absent."""

from __future__ import annotations

import shutil

import pytest

from privrec.cli import main
from privrec.data.fetch import fetch, local_copy
from privrec.data.registry import get_spec
from privrec.data.sequence_files import read_sequence_file
from privrec.errors import DataFormatError, DatasetError


def test_s3rec_and_sasrec_lines_read_in_file_order(tmp_path):
    (tmp_path / "s.txt").write_text("1 5 3 9\n2 3\n\n3 7 7\n")
    f = read_sequence_file(tmp_path / "s.txt", "s3rec")
    assert f["user_id"].tolist() == ["1", "1", "1", "2", "3", "3"]
    assert f["item_id"].tolist() == ["5", "3", "9", "3", "7", "7"]
    assert f["timestamp"].tolist() == [0.0, 1.0, 2.0, 0.0, 0.0, 1.0]
    (tmp_path / "v.txt").write_text("1 5\n2 3\n1 4\n")             # a user's lines need not be contiguous
    f = read_sequence_file(tmp_path / "v.txt", "sasrec")
    assert f[f["user_id"] == "1"]["item_id"].tolist() == ["5", "4"] and f["timestamp"].tolist() == [0.0, 0.0, 1.0]
    (tmp_path / "bad.txt").write_text("1 5\n2\n")
    with pytest.raises(DataFormatError, match="bad.txt:2: a user with no items"):
        read_sequence_file(tmp_path / "bad.txt", "s3rec")
    with pytest.raises(DataFormatError, match="bad.txt:2: expected 'user item'"):
        read_sequence_file(tmp_path / "bad.txt", "sasrec")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(DataFormatError, match="not a text file"):
        read_sequence_file(tmp_path / "bin.txt", "s3rec")


def test_a_file_dataset_without_a_local_copy_names_its_upstream(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVREC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("privrec.data.fetch.local_dirs", lambda: [tmp_path / "nowhere"])
    with pytest.raises(DatasetError, match="beauty ships in no package: get Beauty.txt.*CIKM2020-S3Rec.*--from FOLDER"):
        fetch("beauty")


@pytest.mark.parametrize("name,users,items,interactions", [
    ("beauty", 22363, 12101, 198502), ("sports", 35598, 18357, 296337), ("toys", 19412, 11924, 167597),
    ("yelp", 30431, 20033, 316354), ("video", 31013, 23715, 287107)])
def test_the_shared_copies_import_verified_with_their_published_counts(tmp_path, monkeypatch, name, users, items,
                                                                       interactions, capsys):
    src = local_copy(get_spec(name))
    if src is None:
        pytest.skip(f"no local copy of {name} (../shared/datasets or $PRIVREC_DATA_DIRS)")
    monkeypatch.setenv("PRIVREC_CACHE", str(tmp_path / "cache"))
    assert main(["datasets", "fetch", name, "--from", str(src)]) == 0
    assert main(["datasets", "info", name]) == 0
    out = capsys.readouterr().out
    assert f"users         {users:,}" in out and f"items         {items:,}" in out
    assert f"interactions  {interactions:,}" in out and "order only" in out


def test_an_altered_copy_is_refused(tmp_path, monkeypatch):
    spec = get_spec("video")
    src = local_copy(spec)
    if src is None:
        pytest.skip("no local copy of video (../shared/datasets or $PRIVREC_DATA_DIRS)")
    monkeypatch.setenv("PRIVREC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "copy").mkdir()
    shutil.copy(src / "Video.txt", tmp_path / "copy" / "Video.txt")
    with open(tmp_path / "copy" / "Video.txt", "a") as fh:
        fh.write("1 1\n")
    with pytest.raises(DatasetError, match="Video.txt: SHA-256 .* differs from the pinned"):
        fetch("video", source=tmp_path / "copy" / "Video.txt")
    assert not (tmp_path / "cache" / "datasets" / "video").exists()


def test_attribute_vectors_known_answer():
    """IDF-weighted attribute sets, L2-normalised: the cosine of two items is their shared attributes' weight."""
    import numpy as np

    from privrec.privacy.embeddings import attribute_vectors

    v = attribute_vectors([["a", "b"], ["a"], ["c"], []])
    wa, wb = np.log(4 / 2), np.log(4 / 1)
    assert v.shape == (4, 3) and np.allclose(np.linalg.norm(v[:3], axis=1), 1) and not v[3].any()
    assert float(v[0] @ v[1]) == pytest.approx(wa / np.hypot(wa, wb), rel=1e-6)
    assert float(v[0] @ v[2]) == 0.0


def test_alternatives_come_from_titles_else_attributes_else_refused(tiny_frame):
    import pandas as pd

    from privrec.data.interactions import Interactions
    from privrec.experiments.rr_release import semantics

    items = sorted(tiny_frame["item_id"].astype(str).unique())
    with_attr = Interactions.from_frame(tiny_frame, item_features=pd.DataFrame(
        {"item_id": items, "attributes": ["1 2"] * len(items)}), name="t")
    with_title = Interactions.from_frame(tiny_frame, item_features=pd.DataFrame(
        {"item_id": items, "title": ["x"] * len(items), "attributes": ["1"] * len(items)}), name="t")
    assert semantics(with_attr) == "attributes" and semantics(with_title) == "titles"
    with pytest.raises(DataFormatError, match="neither titles .* nor attribute ids"):
        semantics(Interactions.from_frame(tiny_frame, name="bare"))


def test_beautys_attribute_alternatives_share_an_attribute(tmp_path, monkeypatch):
    """On Amazon Beauty (the paper's short-history set, S3Rec's release), the injective alternative built from
    attribute ids shares an attribute with its item far more often than a random partner (a subset of 300 users
    keeps this fast; the whole catalogue: every one of 12,101 items, against 25% at random)."""
    import numpy as np

    src = local_copy(get_spec("beauty"))
    if src is None:
        pytest.skip("no local copy of beauty (../shared/datasets or $PRIVREC_DATA_DIRS)")
    monkeypatch.setenv("PRIVREC_CACHE", str(tmp_path / "cache"))
    fetch("beauty", source=src)
    from privrec.data.tables import load_dataset
    from privrec.experiments.rr_release import item_embeddings
    from privrec.privacy.alternatives import injective_map

    full = load_dataset("beauty")
    assert full.item_features["attributes"].notna().sum() == full.n_items == 12101
    inter = full.take(full.user <= 300).compact()
    alt = injective_map(item_embeddings(inter)).alt
    sets = [set(str(v).split()) for v in inter.item_features["attributes"].reindex(range(1, inter.n_items + 1))]
    shares = np.mean([bool(sets[i - 1] & sets[alt[i] - 1]) for i in range(1, inter.n_items + 1)])
    partner = np.random.default_rng(0).permutation(inter.n_items)
    chance = np.mean([bool(sets[i] & sets[partner[i]]) for i in range(inter.n_items)])
    assert shares > 0.9 and shares > chance + 0.5
