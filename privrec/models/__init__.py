"""Model registry: ``build(name, **config)``."""

from __future__ import annotations

from privrec.errors import ParameterError
from privrec.models.base import NextItemModel, Recommender
from privrec.models.bert4rec import BERT4Rec, MergedBERT4Rec
from privrec.models.code_encoder import CodeSASRec
from privrec.models.dasl import DASL
from privrec.models.ddtcdr import DDTCDR
from privrec.models.dipsgnn import APGNN, DIPSGNN
from privrec.models.edgerand import EdgeRand
from privrec.models.gru4rec import GRU4Rec
from privrec.models.heterocdr import HeteroCDR
from privrec.models.mf import BPRMF, DMF, DPMF, NeuMF, PrefixBPRMF
from privrec.models.prompting import PromptedCodeSASRec
from privrec.models.sasrec import SASRec
from privrec.models.srgnn import SRGNN

MODELS: dict[str, type[Recommender]] = {"sasrec": SASRec, "gru4rec": GRU4Rec, "bert4rec": BERT4Rec,
                                     "rr-bert4rec": MergedBERT4Rec, "dasl": DASL, "bpr": BPRMF, "neumf": NeuMF,
                                     "dmf": DMF, "heterocdr": HeteroCDR, "ddtcdr": DDTCDR,
                                     "srgnn": SRGNN, "apgnn": APGNN, "dipsgnn": DIPSGNN,
                                     "edgerand": EdgeRand, "bprmf": PrefixBPRMF, "dpmf": DPMF,
                                     "code-sasrec": CodeSASRec, "pfcr-prompt": PromptedCodeSASRec}


def check_config(cls: type[Recommender], config: dict) -> None:
    """Refuse unknown hyperparameters and values a model cannot use, naming the parameter: sizes,
    counts and lengths must be positive integers, rates must lie in [0, 1), other numbers finite."""
    import inspect
    import math

    params = dict(inspect.signature(cls.__init__).parameters)
    if hasattr(cls, "learn"):          # hyperparameters of what is learned from data before training (merges)
        params.update({k: v for k, v in inspect.signature(cls.learn).parameters.items()
                       if k not in ("train_inputs", "config")})
    known = [p for p in params if p != "self"]
    for key, value in config.items():
        if key not in params:
            raise ParameterError(f"{cls.__name__} has no hyperparameter {key!r}; it takes {', '.join(known)}")
        default = params[key].default
        if isinstance(default, bool) or isinstance(value, bool):
            if not isinstance(value, bool) or not isinstance(default, bool):
                raise ParameterError(f"{key} must be {'true or false' if isinstance(default, bool) else 'a number'}, "
                                     f"got {value!r}")
        elif isinstance(default, int) and default is not inspect.Parameter.empty:
            if not isinstance(value, int) or value < 1:
                raise ParameterError(f"{key} must be a positive integer, got {value!r}")
        elif isinstance(default, float):
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ParameterError(f"{key} must be a finite number, got {value!r}")
            if "dropout" in key and not 0 <= value < 1:
                raise ParameterError(f"{key} is a drop probability and must lie in [0, 1), got {value!r}")
            if ("std" in key or "eps" in key or key == "clip") and value <= 0:
                raise ParameterError(f"{key} must be positive, got {value!r}")


def build(name: str, **config) -> Recommender:
    try:
        cls = MODELS[name.lower()]
    except KeyError:
        raise ParameterError(f"unknown model {name!r}; available: {', '.join(MODELS)}") from None
    check_config(cls, config)
    return cls(**config)


def build_on(name: str, train_inputs, **config) -> Recommender:
    """``build(name, **config)``; a model with a vocabulary learned from data (``rr-bert4rec``'s
    item-pair merges) learns it on ``train_inputs``, the sequences it will be trained on."""
    cls = MODELS.get(name.lower())
    if cls is None or not hasattr(cls, "learn"):
        return build(name, **config)
    check_config(cls, config)
    return cls.learn(train_inputs, **config)


__all__ = ["MODELS", "NextItemModel", "Recommender", "build", "build_on", "BPRMF", "DMF", "HeteroCDR", "NeuMF", "BERT4Rec", "DASL", "MergedBERT4Rec", "GRU4Rec", "SASRec", "SRGNN", "APGNN", "DIPSGNN", "EdgeRand", "PrefixBPRMF", "DPMF", "CodeSASRec", "PromptedCodeSASRec"]
