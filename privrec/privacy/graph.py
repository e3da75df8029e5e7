"""DIPSGNN's noisy aggregation (Hu & Fang, Sec. 4.2-4.3, Eqs. 4, 6-9, Alg. 4) and the
EdgeRand baseline (Sec. 5.1).

Behaviour graphs (Eq. 4)
------------------------
Each user sequence becomes a directed, weighted graph over its *unique* items (first-occurrence
order), with count adjacency

    A_out[i, j] = Count(v_i -> v_j)   (consecutive interactions v_i then v_j),   A_in = A_out^T.

Unlike SR-GNN / APGNN, DIPSGNN does **not** divide by the out-degree (Sec. 4.2: normalisation
would let one interaction change a whole row), so the aggregation is a plain *sum*:
:func:`session_graphs` returns counts, never normalised matrices.

Noisy aggregation (Eqs. 6-7, Alg. 4 lines 6-9)
----------------------------------------------
Every node row h_i (item embedding (+) user embedding) is rescaled to L2 norm exactly C (Eq. 6,
:func:`normalize_rows`), then

    H_out = A_out H + N(0, sigma^2 I),    H_in = A_in H + N(0, sigma^2 I)

with sigma the noise *standard deviation* (:func:`noisy_aggregate`, :func:`dipsgnn_step`). The
authors' public code drew ``sigma**2 * randn`` (std sigma^2): :func:`audit_case` with
``reference_bug=True`` reproduces that and the audit flags it.

Privacy accounting (sensitivity of a step, Thm 4.2 and the honest guarantee over a training run,
calibration of sigma) lives in privrec.privacy.graph_accounting; its names are re-exported here.

EdgeRand (Sec. 5.1)
-------------------
Gaussian noise added once to the count matrix A_out (sensitivity 1 per count; A_in = A_out^T is
post-processing of the same noisy release, so it costs nothing extra - noising A_in independently
would double the cost). Calibrated with dp-accounting to the same (eps, delta); it composes only
over the graphs in which the same transition appears (``graphs_per_user``, e.g. every prefix
graph when noised separately), not over epochs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy.graph_accounting import (  # noqa: F401  (most re-exported: callers use privrec.privacy.graph.NAME)
    _UNITS,
    EDGE_FACTOR,
    INTERACTION_FACTOR,
    PaperEpsilon,
    Unit,
    _calibrate,
    _check_C,
    _check_sigma,
    _gaussian_epsilon,
    _guarantee_one,
    calibrate_sigma,
    guarantee,
    paper_closed_form,
    paper_epsilon,
    paper_sigma,
    sensitivity,
)
from privrec.privacy.guarantee import Guarantee
from privrec.privacy.validate import check_delta, check_epsilon, check_id_matrix, check_positive_int

EDGE_RAND_INTERACTION_SENS = math.sqrt(3.0)   # ||Delta A_out||_F for one interaction (+1, +1, -1)
_TINY = 1e-12


# ----------------------------------------------------------------------------- Eq. 4: behaviour graphs
@dataclass(frozen=True)
class SessionGraphs:
    """Per-sequence behaviour graphs of a batch (DIPSGNN Eq. 4, count adjacency).

    nodes:   (B, n) int64, unique item ids of each sequence in first-occurrence order, 0-padded.
    n_nodes: (B,) int64, number of unique items per sequence.
    alias:   (B, L) int64, node index of each sequence position, -1 at padding positions.
    a_out:   (B, n, n) int32, a_out[b, i, j] = number of transitions nodes[b,i] -> nodes[b,j].
    a_in:    the transpose of a_out (a view).
    n = max(n_nodes) (at least 1) unless ``pad_to`` was given.
    """

    nodes: np.ndarray
    n_nodes: np.ndarray
    alias: np.ndarray
    a_out: np.ndarray

    @property
    def a_in(self) -> np.ndarray:
        return np.swapaxes(self.a_out, 1, 2)

    def tensors(self, dtype: torch.dtype = torch.float32, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(A_in, A_out) as torch tensors of shape (B, n, n)."""
        a_out = torch.as_tensor(self.a_out, device=device).to(dtype)
        return a_out.transpose(1, 2).contiguous(), a_out


def session_graphs(sequences: np.ndarray, pad_to: int | None = None) -> SessionGraphs:
    """Eq. 4 behaviour graphs for a front-padded (B, L) id matrix (0 = padding; repeats allowed).

    Vectorised NumPy, O(B L log L): a stable row sort finds first occurrences; transitions are
    consecutive non-padding positions, counted with one ``bincount``.
    """
    seqs = np.asarray(sequences)
    if seqs.ndim != 2:
        raise ParameterError(f"sequences must be a 2-D (users x max_len) id matrix, got shape {seqs.shape}")
    numeric = seqs.size and np.issubdtype(seqs.dtype, np.number) and bool(np.isfinite(seqs).all())
    hi = int(seqs.max()) if numeric else 1
    seqs = check_id_matrix(seqs, max(hi, 1), unique_rows=False).astype(np.int64)
    B, L = seqs.shape
    nz = seqs != 0
    if (nz[:, :-1] & ~nz[:, 1:]).any():
        row = int(np.flatnonzero((nz[:, :-1] & ~nz[:, 1:]).any(axis=1))[0])
        raise ParameterError(f"sequences row {row} has padding (0) after an item; rows must be front-padded "
                             "as produced by Sequences.to_padded")
    rows = np.arange(B)[:, None]
    order = np.argsort(seqs, axis=1, kind="stable")
    srt = seqs[rows, order]
    start = np.ones((B, L), dtype=bool)
    start[:, 1:] = srt[:, 1:] != srt[:, :-1]
    group_start = np.maximum.accumulate(np.where(start, np.arange(L)[None, :], 0), axis=1)
    first_pos = np.empty((B, L), dtype=np.int64)
    first_pos[rows, order] = order[rows, group_start]          # stable sort: earliest position of the value
    pos = np.arange(L)[None, :]
    is_first = nz & (first_pos == pos)
    rank = np.cumsum(is_first, axis=1) - 1                     # node index of each first occurrence
    n_nodes = is_first.sum(axis=1).astype(np.int64)
    n_max = max(int(n_nodes.max()) if B else 0, 1)
    if pad_to is not None:
        pad_to = check_positive_int(pad_to, "pad_to")
        if pad_to < n_max:
            raise ParameterError(f"pad_to={pad_to} is smaller than the largest node count {n_max}; "
                                 f"use pad_to >= {n_max}")
        n_max = pad_to
    alias = np.where(nz, rank[rows, first_pos], -1)
    nodes = np.zeros((B, n_max), dtype=np.int64)
    rb, cp = np.nonzero(is_first)
    nodes[rb, rank[rb, cp]] = seqs[rb, cp]
    valid = nz[:, :-1] & nz[:, 1:]
    bb = np.broadcast_to(rows, (B, L - 1))[valid]
    flat = (bb * n_max + alias[:, :-1][valid]) * n_max + alias[:, 1:][valid]
    a_out = np.bincount(flat, minlength=B * n_max * n_max).astype(np.int32).reshape(B, n_max, n_max)
    return SessionGraphs(nodes=nodes, n_nodes=n_nodes, alias=alias, a_out=a_out)


# ----------------------------------------------------------------------------- Eqs. 6-7: noisy sum aggregation
def _check_finite_tensor(x: torch.Tensor, name: str) -> None:
    # one reduction instead of an elementwise mask: NaN/inf propagate into the sum (overflow of a
    # huge-but-finite tensor is also reported, which is just as fatal downstream)
    if x.is_floating_point() and not bool(torch.isfinite(x.detach().sum())):
        raise ParameterError(f"{name} contains NaN or infinity; check the model for divergence "
                             "(lower the learning rate) or clean the input")


def normalize_rows(h: torch.Tensor, C: float) -> torch.Tensor:
    """Eq. 6: rescale each row (last axis) of ``h`` to L2 norm exactly C.

    Rows of norm < 1e-12 (e.g. all-zero padding rows) have no direction; they are scaled by
    C / 1e-12 instead, so every output row has norm <= C, which is all the sensitivity bound needs.
    Differentiable; the gradient at zero rows is finite.
    """
    c = _check_C(C)
    if not isinstance(h, torch.Tensor):
        raise ParameterError(f"h must be a torch.Tensor of node embeddings, got {type(h).__name__}")
    _check_finite_tensor(h, "h (node embeddings)")
    return h * (c / torch.linalg.vector_norm(h, dim=-1, keepdim=True).clamp_min(_TINY))


def _check_aggregate_inputs(A: torch.Tensor, h: torch.Tensor, generator: torch.Generator) -> None:
    if not isinstance(A, torch.Tensor) or not isinstance(h, torch.Tensor):
        raise ParameterError("A and h must be torch tensors; convert with SessionGraphs.tensors()")
    if A.dim() != 3 or h.dim() != 3 or A.shape[0] != h.shape[0] or A.shape[1] != A.shape[2] or A.shape[2] != h.shape[1]:
        raise ParameterError(f"A must be (B, n, n) and h (B, n, d) with matching B and n, got {tuple(A.shape)} "
                             f"and {tuple(h.shape)}")
    if not isinstance(generator, torch.Generator):
        raise ParameterError("generator must be a torch.Generator (e.g. torch.Generator().manual_seed(0))")


def _aggregate(A: torch.Tensor, h: torch.Tensor, s: float, generator: torch.Generator) -> torch.Tensor:
    out = torch.bmm(A.to(device=h.device, dtype=h.dtype), h)
    if s == 0.0:
        return out
    noise = torch.randn(out.shape, generator=generator, device=generator.device, dtype=h.dtype)
    return out + s * noise.to(h.device)


def noisy_aggregate(A: torch.Tensor, h: torch.Tensor, sigma: float, generator: torch.Generator) -> torch.Tensor:
    """Eq. 7, one matrix: A @ h + N(0, sigma^2 I), sigma the noise *standard deviation*.

    A: (B, n, n) adjacency (counts), h: (B, n, d) node rows (already normalised). Noise is drawn
    with ``torch.randn(..., generator=generator)`` on the generator's device and moved to h's
    device, so the same generator state gives the same output. Differentiable in h.
    Cost: one batched matmul, O(B n^2 d), plus B n d normal draws.
    """
    s = _check_sigma(sigma)
    _check_aggregate_inputs(A, h, generator)
    _check_finite_tensor(h, "h (node embeddings)")
    return _aggregate(A, h, s, generator)


def dipsgnn_step(a_in: torch.Tensor, a_out: torch.Tensor, h: torch.Tensor, C: float, sigma: float,
                 generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Alg. 4 lines 6-9: normalise rows to C, then noisy out- and in-aggregation (in that order,
    from the same generator). Returns (H_in, H_out). Each call is one step of joint L2
    sensitivity sqrt(2) C per transition count (sqrt(10) C per interaction).
    """
    s = _check_sigma(sigma)
    _check_aggregate_inputs(a_out, h, generator)
    _check_aggregate_inputs(a_in, h, generator)
    hn = normalize_rows(h, C)
    h_out = _aggregate(a_out, hn, s, generator)
    h_in = _aggregate(a_in, hn, s, generator)
    return h_in, h_out


# ----------------------------------------------------------------------------- EdgeRand baseline
def _edge_rand_guarantee(std: float, d: float, graphs: int, unit: str) -> Guarantee:
    sens = 1.0 if unit == "edge" else EDGE_RAND_INTERACTION_SENS
    event = accounting.gaussian_event(std / sens, graphs)
    eps, how = _gaussian_epsilon(std / sens, graphs, d)
    return Guarantee(
        mechanism="edgerand", definition="(epsilon, delta)-DP of the noisy adjacency counts",
        epsilon=eps, delta=d, unit=_UNITS[unit],
        parameters={"noise_std": std, "delta": d, "sensitivity": sens, "graphs_per_user": graphs, "unit": unit},
        accounting=how, event=event, relation="add_or_remove_one",
        notes=("Noise is added once to A_out; A_in is its transpose (post-processing, no extra cost). Training "
               "epochs reuse the noisy matrices, so they do not compose; graphs_per_user separate noisy graphs "
               "containing the same transition (e.g. prefix graphs) do.",
               "Node set, positions and labels are not noised (same caveat as DIPSGNN)."))


def edge_rand(A: np.ndarray, epsilon: float, delta: float, rng: np.random.Generator, *,
              graphs_per_user: int = 1, n_nodes: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, Guarantee]:
    """EdgeRand: A_out + N(0, s^2) entrywise, s calibrated so the release is (epsilon, delta)-DP
    per transition count (L2 sensitivity 1) over ``graphs_per_user`` noisy graphs.

    A: (B, n, n) or (n, n) count matrix A_out. If ``n_nodes`` (B,) is given, only the real
    n_nodes x n_nodes block of each graph is noised (padding stays 0; the block size is the node
    count, which is public here). Returns (noisy A_out, noisy A_in = its transpose, Guarantee);
    ``related`` holds the interaction-level guarantee (||Delta A||_F <= sqrt 3).
    """
    e, d = check_epsilon(epsilon), check_delta(delta)
    g = check_positive_int(graphs_per_user, "graphs_per_user")
    arr = np.asarray(A)
    if arr.ndim not in (2, 3) or arr.shape[-1] != arr.shape[-2]:
        raise ParameterError(f"A must be an (n, n) or (B, n, n) count matrix, got shape {arr.shape}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.size == 0 or not np.isfinite(arr).all():
        raise ParameterError("A is empty or contains NaN/infinity; pass the count matrix from session_graphs")
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng must be a numpy.random.Generator (np.random.default_rng(seed))")
    std = _calibrate(e, d, g)        # noise multiplier x sensitivity 1
    noise = rng.normal(0.0, std, size=arr.shape)
    if n_nodes is not None:
        if arr.ndim != 3:
            raise ParameterError("n_nodes needs a batched (B, n, n) A")
        nn = np.asarray(n_nodes).reshape(-1, 1, 1)
        if nn.shape[0] != arr.shape[0]:
            raise ParameterError(f"n_nodes has {nn.shape[0]} entries for {arr.shape[0]} graphs")
        idx = np.arange(arr.shape[-1])
        noise = noise * ((idx[None, :, None] < nn) & (idx[None, None, :] < nn))
    noisy = arr + noise
    gua = _edge_rand_guarantee(std, d, g, "edge").with_related(_edge_rand_guarantee(std, d, g, "interaction"))
    return noisy, np.swapaxes(noisy, -1, -2), gua


# ----------------------------------------------------------------------------- audit
def audit_case(sigma: float = 0.1, C: float = 0.01, delta: float = 1e-5, reference_bug: bool = False) -> dict:
    """Two graphs differing in one count (A_out[0, 1] = 1 vs 0, two nodes with orthogonal rows of
    norm C), one step of :func:`dipsgnn_step`; statistic = projection of (H_out, H_in) onto the
    (unit) difference of the means, which is N(0, std^2) vs N(sqrt(2) C, std^2).

    The claim is the honest one-step epsilon at ``sigma``. ``reference_bug=True`` draws the noise
    with std sigma**2 (the authors' code) while claiming the same: for sigma < 1 the audit flags it.
    """
    s, c, d = _check_sigma(sigma), _check_C(C), check_delta(delta)
    if s == 0:
        raise ParameterError("sigma must be > 0 for an audit")
    claimed = _guarantee_one(s, c, 1, 1, d, "edge").epsilon
    std = s * s if reference_bug else s
    h0 = torch.tensor([[c, 0.0], [0.0, c]], dtype=torch.float64)
    a_a = torch.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=torch.float64)
    a_b = torch.zeros(2, 2, dtype=torch.float64)
    direction = torch.cat([a_a @ h0, a_a.T @ h0]).flatten()          # (H_out, H_in) mean difference
    direction = (direction / direction.norm()).numpy()

    def sampler(a: torch.Tensor):
        def sample(rng: np.random.Generator, n: int) -> np.ndarray:
            gen = torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))
            A = a.expand(n, 2, 2)
            h_in, h_out = dipsgnn_step(A.transpose(1, 2), A, h0.expand(n, 2, 2), c, std, gen)
            return torch.cat([h_out, h_in], dim=1).reshape(n, -1).numpy()
        return sample

    name = f"dipsgnn-aggregation(sigma={s:g}, C={c:g})" + (" [reference code: std sigma**2]" if reference_bug else "")
    return {"name": name, "claimed_epsilon": claimed, "delta": d,
            "sample_a": sampler(a_a), "sample_b": sampler(a_b),
            "kind": "threshold", "key_or_statistic": lambda out: np.asarray(out) @ direction}
