"""User-feature schema and encoding for DIPSGNN's user-feature LDP (Hu & Fang, Sec. 4.1): which
attributes a user has, their public domains, and the encoded vector x_u that Algorithm 3 of
:mod:`privrec.privacy.features` perturbs.

A :class:`FeatureSchema` is an ordered tuple of attributes; a user's encoded vector
x_u = x_1 (+) ... (+) x_n concatenates one block per attribute, d0 columns in all:

* numerical (:func:`numerical`): one column, raw v in the public range [low, high] min-max
  normalised to 2 (v - low)/(high - low) - 1 in [-1, 1] (the input of Algorithm 1);
* categorical (:func:`categorical`): a one-hot block of width m = number of categories, in
  the schema's category order (the input of Algorithm 2).

:func:`encode_features` maps a raw table (one row per user, one column per attribute) to the
float64 (n_users, d0) matrix, refusing values outside the declared domain rather than clipping;
``_check_encoded`` checks such a matrix against the schema before Algorithm 3 perturbs it.

Attribute domains (numerical ranges, category lists) must be public. :func:`movielens_schema`
uses ML-1M's documented codes (age range, gender, occupation; :func:`as_movielens` recodes
ML-100K's table into them); :func:`schema_from_frame` can read domains from the data, which
the schema records (``source="data"``) and the certificate flags: a min/max read from the data
is itself one user's raw value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from privrec.errors import ParameterError

# ML-1M (README of the GroupLens release; RecBole's ml-1m.user): age codes, gender, occupation 0-20
ML1M_AGE = (1, 18, 25, 35, 45, 50, 56)
ML1M_GENDER = ("F", "M")
ML1M_OCCUPATION = tuple(range(21))
# ML-100K (its README / u.occupation): raw ages and occupation names; recoded to ML-1M's age ranges
ML100K_OCCUPATION = ("administrator", "artist", "doctor", "educator", "engineer", "entertainment", "executive",
                     "healthcare", "homemaker", "lawyer", "librarian", "marketing", "none", "other", "programmer",
                     "retired", "salesman", "scientist", "student", "technician", "writer")


Kind = Literal["numerical", "categorical"]


@dataclass(frozen=True)
class Attribute:
    """One user attribute. Numerical: raw values in [low, high], min-max normalised into [-1, 1].
    Categorical: one of ``categories``, encoded one-hot. ``source`` says where the domain came
    from: "declared" (public knowledge) or "data" (read from the features themselves)."""

    name: str
    kind: Kind
    low: float = math.nan
    high: float = math.nan
    categories: tuple = ()
    source: str = "declared"

    @property
    def width(self) -> int:
        return 1 if self.kind == "numerical" else len(self.categories)

    def to_dict(self) -> dict:
        d = {"name": self.name, "kind": self.kind, "source": self.source}
        if self.kind == "numerical":
            d.update(low=self.low, high=self.high)
        else:
            d["categories"] = [c.item() if isinstance(c, np.generic) else c for c in self.categories]
        return d


def numerical(name: str, low: float, high: float, *, source: str = "declared") -> Attribute:
    """A numerical attribute with public range [low, high] (low < high, both finite)."""
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        raise ParameterError(f"attribute {name!r}: range bounds must be numbers, got {low!r}, {high!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(f"attribute {name!r}: numerical range must be finite with min < max, got [{low}, {high}]; "
                             "declare the attribute's public range")
    return Attribute(str(name), "numerical", lo, hi, (), source)


def categorical(name: str, categories: Iterable, *, source: str = "declared") -> Attribute:
    """A categorical attribute with its public list of categories (distinct, at least one)."""
    cats = tuple(categories)
    if not cats:
        raise ParameterError(f"attribute {name!r}: the category list is empty; list every possible value")
    if any(pd.isna(c) for c in cats):
        raise ParameterError(f"attribute {name!r}: NaN is not a category; impute missing values first")
    if len(set(cats)) != len(cats):
        dup = next(c for c in cats if cats.count(c) > 1)
        raise ParameterError(f"attribute {name!r}: category {dup!r} is listed twice")
    return Attribute(str(name), "categorical", categories=cats, source=source)


@dataclass(frozen=True)
class FeatureSchema:
    """An ordered list of attributes; the encoded vector is their blocks concatenated (d0 columns)."""

    attributes: tuple[Attribute, ...]

    def __post_init__(self):
        attrs = self.attributes
        if not isinstance(attrs, tuple):
            raise ParameterError(f"FeatureSchema takes a tuple of attributes, got {type(attrs).__name__}")
        if not attrs:
            raise ParameterError("the feature schema has no attributes; give at least one")
        names = [a.name for a in attrs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise ParameterError(f"attribute name {dup!r} occurs twice in the schema")
        for a in attrs:
            if not isinstance(a, Attribute):
                raise ParameterError(f"schema entries must be Attribute objects (use numerical()/categorical()), got {a!r}")

    @functools.cached_property
    def offsets(self) -> tuple[int, ...]:
        """Start column of every attribute's block, and d0 at the end."""
        return tuple(int(o) for o in np.cumsum([0] + [a.width for a in self.attributes]))

    @property
    def n_attributes(self) -> int:
        return len(self.attributes)

    @property
    def d0(self) -> int:
        return self.offsets[-1]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def block(self, i: int) -> slice:
        return slice(self.offsets[i], self.offsets[i + 1])

    def column_attribute(self) -> np.ndarray:
        """Attribute index of every encoded column (length d0)."""
        return np.repeat(np.arange(self.n_attributes), [a.width for a in self.attributes])

    def columns(self, kind: Kind) -> np.ndarray:
        return np.concatenate([np.arange(self.offsets[i], self.offsets[i + 1])
                               for i, a in enumerate(self.attributes) if a.kind == kind] or [np.zeros(0, int)])

    def data_derived(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes if a.source != "declared")

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        return encode_features(frame, self)

    def to_dict(self) -> dict:
        return {"attributes": [a.to_dict() for a in self.attributes], "d0": self.d0}


def _row_label(frame: pd.DataFrame, pos: int) -> str:
    return f"row {pos} (index {frame.index[pos]!r})"


def encode_features(frame: pd.DataFrame, schema: FeatureSchema) -> np.ndarray:
    """Raw user features (one row per user, one column per attribute name) -> (n_users, d0).

    Numerical: 2 (v - low)/(high - low) - 1, one column. Categorical: one-hot block in the
    schema's category order. Raises ParameterError naming the attribute for a missing column,
    NaN, a numerical value outside the declared range, or an unknown category. O(n d0).
    """
    if not isinstance(frame, pd.DataFrame):
        raise ParameterError(f"features must be a pandas DataFrame with one column per attribute, got {type(frame).__name__}")
    if len(frame) == 0:
        raise ParameterError("the features table is empty (0 users); nothing to encode")
    missing = [a.name for a in schema.attributes if a.name not in frame.columns]
    if missing:
        raise ParameterError(f"attribute(s) {missing} not among the feature columns {list(frame.columns)}; "
                             "rename the columns or fix the schema")
    n = len(frame)
    out = np.zeros((n, schema.d0), dtype=np.float64)
    rows = np.arange(n)
    for i, a in enumerate(schema.attributes):
        col = frame[a.name]
        na = col.isna().to_numpy()
        if na.any():
            raise ParameterError(f"attribute {a.name!r} is missing (NaN) for {_row_label(frame, int(np.flatnonzero(na)[0]))}; "
                                 "impute or drop those users first")
        if a.kind == "numerical":
            values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
            bad = ~np.isfinite(values)
            if bad.any():
                pos = int(np.flatnonzero(bad)[0])
                raise ParameterError(f"attribute {a.name!r} has non-numeric or infinite value {col.iloc[pos]!r} at "
                                     f"{_row_label(frame, pos)}; numerical attributes need finite numbers")
            outside = (values < a.low) | (values > a.high)
            if outside.any():
                pos = int(np.flatnonzero(outside)[0])
                raise ParameterError(f"attribute {a.name!r} has value {float(values[pos])!r} at {_row_label(frame, pos)}, outside "
                                     f"its declared range [{a.low}, {a.high}]; widen the declared range (never "
                                     "clip to the data's own min/max)")
            out[:, schema.offsets[i]] = np.clip(2.0 * (values - a.low) / (a.high - a.low) - 1.0, -1.0, 1.0)
        else:
            codes = pd.Index(a.categories).get_indexer(col)
            unknown = codes < 0
            if unknown.any():
                pos = int(np.flatnonzero(unknown)[0])
                raise ParameterError(f"attribute {a.name!r} has unknown category {col.iloc[pos]!r} at "
                                     f"{_row_label(frame, pos)}; known categories: {list(a.categories)[:25]}")
            out[rows, schema.offsets[i] + codes] = 1.0
    return out


def _check_encoded(encoded, schema: FeatureSchema) -> np.ndarray:
    arr = np.asarray(encoded)
    if arr.ndim != 2:
        raise ParameterError(f"encoded features must be a 2-D (users x d0) matrix, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ParameterError("encoded features are empty (0 users); nothing to perturb")
    if arr.shape[1] != schema.d0:
        raise ParameterError(f"encoded features have {arr.shape[1]} columns but the schema needs d0 = {schema.d0} "
                             f"({', '.join(f'{a.name}:{a.width}' for a in schema.attributes)}); encode with the same schema")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ParameterError(f"encoded features must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    for i, a in enumerate(schema.attributes):
        block = arr[:, schema.block(i)]
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            raise ParameterError(f"attribute {a.name!r} is NaN or infinite for user row {int(np.flatnonzero(~finite)[0])}; "
                                 "impute or drop those users first")
        if a.kind == "numerical":
            v = block[:, 0]
            bad = (v < -1.0) | (v > 1.0)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ParameterError(f"attribute {a.name!r} holds {float(v[row])!r} for user row {row}, outside [-1, 1]; "
                                     "encode raw features with encode_features (min-max into the declared range)")
        else:
            ok = ((block == 0.0) | (block == 1.0)).all(axis=1) & (block.sum(axis=1) == 1.0)
            if not ok.all():
                row = int(np.flatnonzero(~ok)[0])
                raise ParameterError(f"attribute {a.name!r} is not one-hot for user row {row} ({block[row].tolist()}); "
                                     "each categorical block needs exactly one 1")
    return arr


def as_movielens(frame: pd.DataFrame) -> pd.DataFrame:
    """ML-100K's user table in ML-1M's coding, so both read with :func:`movielens_schema`: raw ages
    bucketed into ML-1M's documented ranges (1: under 18, 18: 18-24, 25: 25-34, 35: 35-44, 45: 45-49,
    50: 50-55, 56: 56+), occupations kept as ML-100K's documented names. ML-1M's table passes unchanged."""
    if "age" not in frame.columns:
        return frame
    age = pd.to_numeric(frame["age"], errors="coerce")
    if age.isna().any():
        raise ParameterError("user feature 'age' has values that are not numbers; pass a MovieLens .user table")
    if set(age.unique()) <= set(ML1M_AGE):
        return frame
    if (age < 0).any():
        raise ParameterError("user feature 'age' has negative values")
    out = frame.copy()
    out["age"] = np.asarray(ML1M_AGE, dtype=float)[np.searchsorted(np.asarray(ML1M_AGE), age.to_numpy(), "right") - 1]
    return out


def movielens_schema(frame: pd.DataFrame | None = None) -> FeatureSchema:
    """ML-1M's user features as DIPSGNN uses them: age range (7 codes), gender (F/M) and
    occupation (0-20; ML-100K's 21 names), all categorical (zip code ignored); ML-100K's table
    after :func:`as_movielens`. Categories are ML-1M's documented
    codes, never read from the data. With ``frame`` (e.g. RecBole's ml-1m.user read by
    ``read_atomic``: age and occupation float, gender token), the columns are checked and the
    codes typed to match (numbers for numeric columns, strings otherwise)."""
    spec = (("age", ML1M_AGE), ("gender", ML1M_GENDER), ("occupation", ML1M_OCCUPATION))
    attrs = []
    for name, codes in spec:
        if frame is not None:
            if name not in frame.columns:
                raise ParameterError(f"ML-1M attribute {name!r} not among the feature columns {list(frame.columns)}; "
                                     "pass the ml-1m.user table (columns age, gender, occupation)")
            if name == "occupation" and set(frame[name].dropna().astype(str)) <= set(ML100K_OCCUPATION) and \
                    not pd.api.types.is_numeric_dtype(frame[name]):
                codes = ML100K_OCCUPATION               # ML-100K's names
            elif name != "gender":
                numeric = pd.api.types.is_numeric_dtype(frame[name])
                codes = tuple(float(c) for c in codes) if numeric else tuple(str(c) for c in codes)
        attrs.append(categorical(name, codes))
    return FeatureSchema(tuple(attrs))


def schema_from_frame(frame: pd.DataFrame, categorical: Sequence[str] = (), numerical: Sequence[str] = (), *,
                      ranges: Mapping[str, tuple[float, float]] | None = None,
                      categories: Mapping[str, Sequence] | None = None) -> FeatureSchema:
    """A schema for the named columns of ``frame`` (in the frame's column order).

    Domains come from ``ranges`` / ``categories`` where given (public knowledge: preferred),
    otherwise from the data (sorted distinct values; min and max), marked ``source="data"`` and
    flagged in the certificate, since a domain read from the data is not protected.
    """
    cat_names, num_names = list(categorical), list(numerical)
    both = set(cat_names) & set(num_names)
    if both:
        raise ParameterError(f"attribute(s) {sorted(both)} listed as both categorical and numerical")
    if not cat_names and not num_names:
        raise ParameterError("name at least one categorical or numerical column")
    missing = [c for c in cat_names + num_names if c not in frame.columns]
    if missing:
        raise ParameterError(f"attribute(s) {missing} not among the feature columns {list(frame.columns)}")
    if len(frame) == 0 and (set(cat_names) - set(categories or {}) or set(num_names) - set(ranges or {})):
        raise ParameterError("the features table is empty; domains cannot be read from it - declare them")
    ranges, categories = dict(ranges or {}), dict(categories or {})
    attrs = []
    for col in frame.columns:
        if col in cat_names:
            if col in categories:
                attrs.append(_categorical(col, categories[col]))
            else:
                values = frame[col].dropna().unique().tolist()
                attrs.append(_categorical(col, sorted(values, key=lambda v: (str(type(v)), v)), source="data"))
        elif col in num_names:
            if col in ranges:
                lo, hi = ranges[col]
                attrs.append(_numerical(col, lo, hi))
            else:
                values = pd.to_numeric(frame[col], errors="coerce")
                lo, hi = values.min(), values.max()
                if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                    raise ParameterError(f"attribute {col!r}: cannot read a range [min < max] from the data (got "
                                         f"[{lo}, {hi}]); declare it in ranges={{{col!r}: (low, high)}}")
                attrs.append(_numerical(col, lo, hi, source="data"))
    return FeatureSchema(tuple(attrs))


_categorical, _numerical = categorical, numerical
