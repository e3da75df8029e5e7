import numpy as np
import pandas as pd
import pytest

from privrec.data.interactions import IdMap, Interactions
from privrec.data.tables import load_file, write_interactions
from privrec.errors import DataFormatError, EmptyDataError, UnknownIdError


def test_idmap_round_trip_and_padding():
    ids, codes = IdMap.factorize(["b", "a", "b", "c"])
    assert ids.tokens[0] == "[PAD]" and len(ids) == 3
    assert codes.tolist() == [2, 1, 2, 3] and codes.dtype == np.int32
    assert ids.decode(codes).tolist() == ["b", "a", "b", "c"]
    assert ids.encode(["c", "a"]).tolist() == [3, 1]


def test_unknown_id_message_names_the_id():
    ids, _ = IdMap.factorize(["a", "b"], kind="user")
    with pytest.raises(UnknownIdError, match=r"unknown user id\(s\) \['zzz'\]"):
        ids.encode(["a", "zzz"])


def test_from_frame_validates(tiny_frame):
    with pytest.raises(DataFormatError, match="item column 'item_id' is missing"):
        Interactions.from_frame(tiny_frame.drop(columns="item_id"))
    bad = tiny_frame.copy()
    bad.loc[3, "rating"] = np.nan
    with pytest.raises(DataFormatError, match="rating is missing or non-numeric"):
        Interactions.from_frame(bad)
    bad = tiny_frame.copy()
    bad["timestamp"] = bad["timestamp"].astype(object)
    bad.loc[5, "timestamp"] = "yesterday"
    with pytest.raises(DataFormatError, match="timestamp"):
        Interactions.from_frame(bad)
    with pytest.raises(EmptyDataError):
        Interactions.from_frame(tiny_frame.iloc[:0])


def test_compact_reindexes_ids_and_features(tiny_frame):
    feats = pd.DataFrame({"user_id": [f"u{i}" for i in range(1, 31)], "age": np.arange(30.0)})
    inter = Interactions.from_frame(tiny_frame, user_features=feats)
    keep = inter.take(inter.users.decode(inter.user) != "u1").compact()
    assert keep.n_users == 29
    assert keep.user.min() == 1 and keep.user.max() == 29
    age_of = dict(zip(keep.users.tokens[1:], keep.user_features["age"]))
    assert age_of["u2"] == 1.0 and "u1" not in age_of


@pytest.mark.parametrize("suffix", [".inter", ".csv", ".parquet"])
def test_file_formats_round_trip(tmp_path, tiny_frame, suffix):
    path = write_interactions(tiny_frame, tmp_path / f"t{suffix}")
    inter = load_file(path)
    assert len(inter) == len(tiny_frame) and inter.n_users == 30
    back = inter.to_frame()
    assert sorted(back["item_id"]) == sorted(tiny_frame["item_id"])


def test_csv_column_aliases(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("userId,movieId,rating,timestamp\n1,10,4,100\n1,11,5,101\n")
    inter = load_file(path)
    assert inter.n_users == 1 and inter.n_items == 2


def test_bad_extension_and_empty_csv(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{}")
    with pytest.raises(DataFormatError, match="unsupported extension"):
        load_file(p)
    e = tmp_path / "e.csv"
    e.write_text("")
    with pytest.raises(DataFormatError, match="empty"):
        load_file(e)


def test_item_texts_read_titles_years_and_genres(tmp_path):
    import pandas as pd

    from privrec.data.interactions import Interactions
    from privrec.data.text import item_texts

    frame = pd.DataFrame({"user_id": ["u1", "u1", "u2"], "item_id": ["1", "2", "3"], "timestamp": [1.0, 2.0, 3.0]})
    feats = pd.DataFrame({"item_id": ["1", "2", "3"], "movie_title": [["Toy", "Story"], "Heat", None],
                          "release_year": [1995.0, 1995.0, None], "class": [["Animation", "Comedy"], "Crime", "Drama"]})
    inter = Interactions.from_frame(frame, item_features=feats)
    assert item_texts(inter) == ["Toy Story (1995)", "Heat (1995)", "3"]         # missing title: the raw id
    assert item_texts(inter, genres=True)[:2] == ["Toy Story (1995), Animation, Comedy", "Heat (1995), Crime"]
    bare = Interactions.from_frame(frame)
    assert item_texts(bare) == ["1", "2", "3"]
    with pytest.raises(DataFormatError, match="title"):
        item_texts(bare, require_title=True)


def test_amazon_review_columns_are_recognised(tmp_path):
    """Amazon's own spellings, 2014-18 (reviewerID, asin, overall, unixReviewTime) and 2023 (user_id, parent_asin
    over asin, rating, timestamp in ms), read without renaming; other columns are ignored."""
    import pandas as pd

    from privrec.data.tables import load_file

    old = pd.DataFrame({"reviewerID": ["A1", "A1", "B2"], "asin": ["x", "y", "x"], "overall": [5.0, 3.0, 4.0],
                        "unixReviewTime": [1400000000, 1400000100, 1400000050], "reviewTime": ["05 13, 2014"] * 3,
                        "reviewText": ["good", "ok", "fine"]})
    old.to_csv(tmp_path / "amazon2014.csv", index=False)
    inter = load_file(tmp_path / "amazon2014.csv")
    assert (len(inter), inter.n_users, inter.n_items) == (3, 2, 2)
    assert sorted(inter.rating.tolist()) == [3.0, 4.0, 5.0]

    new = pd.DataFrame({"user_id": ["u1", "u2"], "asin": ["v1", "v2"], "parent_asin": ["p", "p"], "rating": [5.0, 1.0],
                        "timestamp": [1588687728923, 1588687729923]})
    new.to_parquet(tmp_path / "amazon2023.parquet")
    inter = load_file(tmp_path / "amazon2023.parquet")
    assert inter.n_items == 1 and inter.n_users == 2        # parent_asin: both variants are one product
