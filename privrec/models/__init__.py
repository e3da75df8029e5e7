"""Model registry: ``build(name, **config)``."""

from __future__ import annotations

from privrec.errors import ParameterError
from privrec.models.base import NextItemModel, Recommender
from privrec.models.dasl import DASL
from privrec.models.gru4rec import GRU4Rec
from privrec.models.sasrec import SASRec

MODELS: dict[str, type[Recommender]] = {"sasrec": SASRec, "gru4rec": GRU4Rec, "dasl": DASL}


def build(name: str, **config) -> Recommender:
    try:
        cls = MODELS[name.lower()]
    except KeyError:
        raise ParameterError(f"unknown model {name!r}; available: {', '.join(MODELS)}") from None
    return cls(**config)


__all__ = ["MODELS", "NextItemModel", "Recommender", "build", "DASL", "GRU4Rec", "SASRec"]
