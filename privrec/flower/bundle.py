"""The federation bundle: everything a PFCR client or server reads, in one folder.

A *bundle* is written once by the driver (``privrec reproduce pfcr``) and read by every Flower
process, in simulation or deployment alike, so both run the same computation::

    BUNDLE/federation.json     configuration (model, local training, codec, strategy, rounds, seed)
    BUNDLE/domain{k}.npz       domain k's chronological sequences (indptr, items) and item codes
    BUNDLE/table0.npy          the initial code-embedding table E (seeded)
    BUNDLE/state/              client{k}-round{t}.pt (local weights, optimiser and RNG after round t),
                               global-round{t}.npy (E after round t), result.json (the server's record)

In a real multi-organisation deployment each organisation holds only its own ``domain{k}.npz`` and
state; nothing but the encoded table change leaves it (see docs/pfcr.md, "Federation on Flower").
Client k's round t is a pure function of the bundle, the global table it receives and its own
round t-1 checkpoint, so a client process may be restarted between rounds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from privrec.data.sequences import Sequences
from privrec.data.splits import Split
from privrec.errors import ParameterError
from privrec.evaluation.evaluator import EvalConfig
from privrec.training.federated import CodecConfig
from privrec.training.trainer import TrainConfig
from privrec.utils.io import atomic_path

STRATEGIES = ("fedavg", "fedprox", "scaffold", "popcode")
EVAL = EvalConfig(mode="full", ks=(10, 50), metrics=("hr", "ndcg"), mask_history=True)


@dataclass(frozen=True)
class FederationConfig:
    """One federated pre-training: ``rounds`` of ``local_epochs`` per client, uploads under ``codec``."""

    rounds: int = 10
    local_epochs: int = 1
    codec: CodecConfig = field(default_factory=CodecConfig)
    strategy: str = "fedavg"
    proximal_mu: float = 0.0            # FedProx's mu (strategy "fedprox")
    popular_share: float = 0.5          # PopCode: the share of code rows federated (strategy "popcode")
    max_len: int = 50
    model: dict = field(default_factory=lambda: {"hidden": 300, "heads": 4, "layers": 2, "n_codebooks": 32,
                                                 "n_centroids": 256})
    train: TrainConfig = field(default_factory=lambda: TrainConfig(batch_size=256, lr=1e-3, progress=False))
    seed: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.rounds, int) and self.rounds >= 1):
            raise ParameterError(f"rounds must be an integer >= 1, got {self.rounds!r}")
        if not (isinstance(self.local_epochs, int) and self.local_epochs >= 1):
            raise ParameterError(f"local_epochs must be an integer >= 1, got {self.local_epochs!r}")
        if self.strategy not in STRATEGIES:
            raise ParameterError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.proximal_mu < 0 or (self.strategy == "fedprox") != (self.proximal_mu > 0):
            raise ParameterError(f"proximal_mu must be > 0 with fedprox and 0 otherwise, got {self.proximal_mu} "
                                 f"with {self.strategy}")
        if not 0 < self.popular_share <= 1:
            raise ParameterError(f"popular_share must be in (0, 1], got {self.popular_share}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["train"] = self.train.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FederationConfig:
        d = dict(d)
        return cls(**{**d, "codec": CodecConfig(**d["codec"]), "train": TrainConfig(**d["train"])})


@dataclass(frozen=True)
class Bundle:
    path: Path
    config: FederationConfig
    names: tuple[str, ...]
    n_items: tuple[int, ...]

    @property
    def n_domains(self) -> int:
        return len(self.names)

    @property
    def state(self) -> Path:
        return self.path / "state"

    def domain(self, k: int) -> tuple[Split, np.ndarray]:
        """Domain ``k``'s split (rows = user codes) and item codes ((n_items + 1, n_codebooks), row 0 padding)."""
        if not 0 <= k < self.n_domains:
            raise ParameterError(f"partition-id {k} is not a domain of {self.path} (it has {self.n_domains}); "
                                 f"start SuperNodes with partition-id 0..{self.n_domains - 1}")
        with np.load(self.path / f"domain{k}.npz") as z:
            parts = [Sequences(z[f"{p}_indptr"], z[f"{p}_items"]) for p in ("train", "valid", "test")]
            return Split(*parts, str(z["kind"]), {}), z["codes"]

    @cached_property
    def popular(self) -> np.ndarray | None:
        """PopCode's federated rows of E (a read-only boolean mask), or None when every row is federated;
        read from the domain files once per bundle (every round of every client asks for it)."""
        if self.config.strategy != "popcode":
            return None
        from privrec.training.fl_strategies import popular_rows

        rows = popular_rows([self.domain(k)[1] for k in range(self.n_domains)], self.config.model["n_centroids"],
                            self.config.popular_share)
        rows.flags.writeable = False
        return rows

    def table0(self) -> np.ndarray:
        return np.load(self.path / "table0.npy")

    def client_state(self, k: int, round_: int) -> Path:
        return self.state / f"client{k}-round{round_}.pt"

    def global_table(self, round_: int) -> Path:
        return self.state / f"global-round{round_}.npy"


def write_bundle(path: str | Path, domains: list[tuple[str, Sequences | Split, np.ndarray]],
                 cfg: FederationConfig) -> Bundle:
    """Write a bundle for ``domains`` = [(name, split or sequences, item codes)] (sequences are split
    leave-one-out), the initial table seeded by ``cfg.seed``. Any earlier ``state/`` is removed (a new
    federation starts from round 0)."""
    import shutil

    from privrec.data.splits import leave_one_out

    path = Path(path)
    if len(domains) < 2:
        raise ParameterError(f"a federation needs at least two domains (clients), got {len(domains)}")
    m = cfg.model
    domains = [(name, part if isinstance(part, Split) else leave_one_out(part), codes) for name, part, codes in domains]
    for name, split, codes in domains:
        if split.train.lengths[1:].sum() == 0:
            raise ParameterError(f"domain {name!r} has no interactions: a client with no data cannot train")
        if codes.shape[1] != m["n_codebooks"] or codes[1:].max() >= m["n_centroids"]:
            raise ParameterError(f"domain {name!r}: codes of shape {codes.shape} do not fit {m['n_codebooks']} "
                                 f"codebooks x {m['n_centroids']} centroids")
    path.mkdir(parents=True, exist_ok=True)
    if (path / "state").exists():
        shutil.rmtree(path / "state")
    for k, (_, split, codes) in enumerate(domains):
        parts = {f"{p}_{a}": getattr(getattr(split, p), a) for p in ("train", "valid", "test") for a in ("indptr", "items")}
        with atomic_path(path / f"domain{k}.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, codes=codes, kind=np.array(split.kind), **parts)
    rng = np.random.default_rng([cfg.seed, 11])
    init_std = float(m.get("init_std", 0.02))
    table = rng.normal(0.0, init_std, size=(m["n_codebooks"] * m["n_centroids"], m["hidden"])).astype(np.float32)
    with atomic_path(path / "table0.npy") as tmp, open(tmp, "wb") as fh:
        np.save(fh, table)
    meta = {"config": cfg.to_dict(), "names": [d[0] for d in domains],
            "n_items": [int(len(d[2]) - 1) for d in domains]}
    with atomic_path(path / "federation.json") as tmp:
        Path(tmp).write_text(json.dumps(meta, indent=1))
    load_bundle.cache_clear()
    return load_bundle(str(path))


@lru_cache(maxsize=4)
def load_bundle(path: str) -> Bundle:
    p = Path(path)
    meta_file = p / "federation.json"
    if not meta_file.is_file():
        raise ParameterError(f"{p} is not a federation bundle (no federation.json); write one with "
                             "privrec.flower.bundle.write_bundle or `privrec reproduce pfcr`")
    meta = json.loads(meta_file.read_text())
    return Bundle(p.resolve(), FederationConfig.from_dict(meta["config"]), tuple(meta["names"]),
                  tuple(int(n) for n in meta["n_items"]))
