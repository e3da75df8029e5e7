"""DIPSGNN's noisy aggregation (Hu & Fang, Sec. 4.2-4.3, Eqs. 4, 6-9, Alg. 4, Thm 4.2) and the
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

Sensitivity (checked by brute force in tests/privacy/test_graph.py)
------------------------------------------------------------------
*Edge level* (the paper's unit): A_out differs by 1 in one entry (p, q). Then A_out H changes in
row p by H_q and A_in H in row q by H_p: each release moves by C, the *pair* released at every
step by sqrt(2) C. (The proof of Thm 4.2 analyses one matrix, writes H_p for H_q - harmless - and
composes T releases of sensitivity C, i.e. it drops the second release of each step.)

*Interaction level*: deleting the k-th interaction b of ... a b c ... does **not** change one
count, as the proof says: it removes a->b and b->c and adds a->c (three counts). With unit rows,
Delta(A_out H) has row a = H_b - H_c and row b = H_c; Delta(A_in H) has row b = H_a and row
c = H_b - H_a. With H_a = H_c = -H_b both reach norm^2 = 4C^2 + C^2, so the step's joint
sensitivity is sqrt(10) C (not sqrt(3)*sqrt(2) C = sqrt(6) C: the changed counts share rows and
the difference H_b - H_c can have norm 2C). Coinciding items (a = c, a = b, b = c) never exceed
it; deleting the first or last interaction changes one count (sqrt(2) C). The tests enumerate all
sequences over a 3-letter alphabet up to length 6 and prove the maximum 10 C^2 is exact (a
sign-vector H attains it; the Gram relaxation sum |M_jk| bounds it from above). The count view
keeps the node set fixed: deleting the only occurrence of an item also deletes its node, which
changes the *shape* of the release and is not protected at all.

Honest guarantee (what :func:`guarantee` reports)
-------------------------------------------------
One forward pass releases 2 T Gaussians (T steps x {out, in}); a step is one Gaussian of L2
sensitivity s = sqrt(2) C (edge) or sqrt(10) C (interaction) at noise sigma, adaptively composed
(H at step t depends on earlier noisy outputs only). Training re-noises at *every* forward pass
that touches the user's graph: ``passes`` = epochs x graphs built from the user's sequence per
epoch (the paper trains 10 epochs on every prefix of the sequence, and an early transition occurs
in every prefix graph). The total is the dp-accounting composition of T x passes Gaussians with
noise multiplier sigma / s - equivalently one Gaussian with multiplier sigma / (s sqrt(T passes)).
Thm 4.2 (``claimed``) composes only the T steps of one pass at sensitivity C.

What this covers - and what DIPSGNN assumes
-------------------------------------------
The guarantee is for the aggregates *released inside training*, as DP with respect to the
adjacency matrices with everything else held fixed (node set, alias positions, labels, user
features). DIPSGNN argues that the rest of the model is post-processing. It is not: the readout
(Eq. 10-11) reads the raw sequence (z_l is the embedding of the *last* item, z_g attends over the
sequence positions), the loss uses the raw next-item labels, and the node set is the user's raw
item set. None of these is noised, so the trained weights and the recommendations are **not**
(eps, delta)-DP with respect to a user's interactions; only the noisy aggregates are. At
interaction level this also means H at later passes depends on the raw change (through the
gradients), so the interaction-level number bounds the aggregate releases for given H only.

EdgeRand (Sec. 5.1)
-------------------
Gaussian noise added once to the count matrix A_out (sensitivity 1 per count; A_in = A_out^T is
post-processing of the same noisy release, so it costs nothing extra - noising A_in independently
would double the cost). Calibrated with dp-accounting to the same (eps, delta); it composes only
over the graphs in which the same transition appears (``graphs_per_user``, e.g. every prefix
graph when noised separately), not over epochs.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import torch

from privrec.errors import ParameterError
from privrec.privacy import accounting
from privrec.privacy.guarantee import Claim, Guarantee
from privrec.privacy.validate import check_delta, check_epsilon, check_id_matrix, check_positive_int

Unit = Literal["edge", "interaction"]

EDGE_FACTOR = math.sqrt(2.0)          # joint L2 sensitivity of (A_out H, A_in H) per unit C, one count
INTERACTION_FACTOR = math.sqrt(10.0)  # ... one interaction deleted/inserted (three counts, see module doc)
EDGE_RAND_INTERACTION_SENS = math.sqrt(3.0)   # ||Delta A_out||_F for one interaction (+1, +1, -1)
_TINY = 1e-12

_UNITS = {
    "edge": ("one transition count of one user's behaviour graph (A_out[p, q] +/- 1, A_in = A_out^T); "
             "node set, positions and labels held fixed"),
    "interaction": ("one interaction deleted from / inserted into one user's sequence (up to three "
                    "transition counts: a->b, b->c removed, a->c added); node set held fixed"),
}


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
def _check_C(C: float) -> float:
    try:
        c = float(C)
    except (TypeError, ValueError):
        raise ParameterError(f"C (embedding norm) must be a number, got {C!r}") from None
    if not math.isfinite(c) or c <= 0:
        raise ParameterError(f"C (embedding norm) must be a positive finite number, got {C!r}; the paper uses 0.1-1")
    return c


def _check_sigma(sigma: float) -> float:
    try:
        s = float(sigma)
    except (TypeError, ValueError):
        raise ParameterError(f"sigma (noise standard deviation) must be a number, got {sigma!r}") from None
    if not math.isfinite(s) or s < 0:
        raise ParameterError(f"sigma (noise standard deviation) must be a finite number >= 0, got {sigma!r}; "
                             "use calibrate_sigma(epsilon, delta, ...) to pick it")
    return s


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


# ----------------------------------------------------------------------------- Thm 4.2 and the honest account
def sensitivity(C: float, unit: Unit = "edge") -> float:
    """Joint L2 sensitivity of one step (both A_out H and A_in H) with rows of norm C."""
    c = _check_C(C)
    if unit == "edge":
        return EDGE_FACTOR * c
    if unit == "interaction":
        return INTERACTION_FACTOR * c
    raise ParameterError(f"unit must be 'edge' or 'interaction', got {unit!r}")


class PaperEpsilon(NamedTuple):
    closed_form: float    # Thm 4.2: T C^2/(2 sigma^2) + C sqrt(2 T log(1/delta)) / sigma
    accountant: float     # dp-accounting for the same premise: T Gaussians of sensitivity C
    accounting: str


@functools.lru_cache(maxsize=512)
def _gaussian_epsilon(z: float, count: int, delta: float) -> tuple[float, str]:
    """accounting.epsilon of ``count`` composed Gaussians at noise multiplier z (memoised: the
    PLD accountant takes seconds when epsilon is large, and guarantees are recomputed often)."""
    if z == 0.0:
        return math.inf, "no noise"
    return accounting.epsilon(accounting.gaussian_event(z, count), delta)


@functools.lru_cache(maxsize=512)
def _calibrate(epsilon: float, delta: float, count: int) -> float:
    return accounting.calibrate_gaussian(epsilon, delta, count)


def _check_T(T) -> int:
    return check_positive_int(T, "T (propagation steps)")


def paper_closed_form(sigma: float, C: float, T: int, delta: float) -> float:
    """Thm 4.2's formula, eps_2 = T C^2 / (2 sigma^2) + C sqrt(2 T log(1/delta)) / sigma (pure arithmetic)."""
    s, c, t, d = _check_sigma(sigma), _check_C(C), _check_T(T), check_delta(delta)
    if s == 0.0:
        return math.inf
    return t * c * c / (2 * s * s) + c * math.sqrt(2 * t * math.log(1 / d)) / s


def paper_sigma(epsilon: float, C: float, T: int, delta: float) -> float:
    """The sigma at which Thm 4.2's formula equals ``epsilon`` (what the paper would use for its eps2):
    with x = C / sigma, eps = T x^2 / 2 + sqrt(2 T log(1/delta)) x, so
    x = (sqrt(b^2 + 2 T eps) - b) / T with b = sqrt(2 T log(1/delta))."""
    e, c, t, d = check_epsilon(epsilon), _check_C(C), _check_T(T), check_delta(delta)
    b = math.sqrt(2 * t * math.log(1 / d))
    return c * t / (math.sqrt(b * b + 2 * t * e) - b)


def paper_epsilon(sigma: float, C: float, T: int, delta: float) -> PaperEpsilon:
    """What Thm 4.2 claims for one forward pass: T releases of sensitivity C (its premise).

    ``closed_form`` is the theorem's formula (RDP of T Gaussians, converted with the
    log(1/delta)/(alpha-1) term and optimised over alpha); ``accountant`` is dp-accounting's
    (tighter) epsilon for exactly the same T releases.
    """
    s, c, t, d = _check_sigma(sigma), _check_C(C), _check_T(T), check_delta(delta)
    if s == 0.0:
        return PaperEpsilon(math.inf, math.inf, "no noise")
    closed = paper_closed_form(s, c, t, d)
    eps, how = _gaussian_epsilon(s / c, t, d)
    return PaperEpsilon(closed, eps, how)


def _guarantee_one(s: float, c: float, t: int, p: int, d: float, unit: str) -> Guarantee:
    sens = sensitivity(c, unit)                 # type: ignore[arg-type]
    z = s / sens
    event = accounting.gaussian_event(z, t * p)
    eps, how = _gaussian_epsilon(z, t * p, d)
    claim = paper_closed_form(s, c, t, d)
    notes = [
        f"Per step: one Gaussian of joint L2 sensitivity {sens / c:.4g} C over (A_out H, A_in H); "
        f"T x passes = {t * p} adaptively composed steps ({2 * t * p} matrix releases), noise multiplier {z:.4g}.",
        "The claim is Thm 4.2's closed form for one pass (T releases of sensitivity C); paper_epsilon() also "
        "gives dp-accounting's tighter value for that premise.",
        "Covers only the aggregates released inside training, as DP w.r.t. the adjacency counts with the node "
        "set, alias positions, labels and user features held fixed. The readout (last item, attention over "
        "positions), the labels and the node set use the raw sequence without noise, so trained weights and "
        "recommendations are not (epsilon, delta)-DP w.r.t. a user's interactions.",
    ]
    if unit == "interaction":
        notes.append("Deleting the only occurrence of an item removes its node (changes the release's shape): "
                     "not covered. Later passes' H depends on the raw change through gradients, so this bounds "
                     "the aggregate releases for given H only.")
    return Guarantee(
        mechanism="dipsgnn-noisy-aggregation",
        definition="(epsilon, delta)-DP of the noisy aggregates over all training passes",
        epsilon=eps, delta=d, unit=_UNITS[unit],
        parameters={"sigma": s, "C": c, "T": t, "passes": p, "delta": d, "sensitivity": sens,
                    "noise_multiplier": z, "steps_composed": t * p, "unit": unit},
        valid=True,
        claimed=Claim(claim, d, "DIPSGNN Theorem 4.2",
                      "Thm 4.2 composes the T steps of one forward pass at sensitivity C; each step releases "
                      "both A_out H and A_in H (sqrt 2 C), and training re-noises every pass"),
        accounting=how, event=event, relation="add_or_remove_one", notes=tuple(notes))


def _check_passes(passes) -> int:
    return check_positive_int(passes, "passes (epochs x forward passes per epoch that use the user's graph)")


def guarantee(sigma: float, C: float, T: int, passes: int, delta: float, unit: Unit = "edge", *,
              related: bool = True) -> Guarantee:
    """Honest (epsilon, delta) of DIPSGNN's noisy aggregation over a whole training run.

    passes = epochs x number of forward passes per epoch whose graphs contain the protected
    unit (with the paper's prefix subsequences, up to len(sequence) - 1 per epoch).
    ``related`` (default) adds the same run under the other unit as ``Guarantee.related``.
    """
    s, c, t, p, d = _check_sigma(sigma), _check_C(C), _check_T(T), _check_passes(passes), check_delta(delta)
    if unit not in _UNITS:
        raise ParameterError(f"unit must be 'edge' or 'interaction', got {unit!r}")
    main = _guarantee_one(s, c, t, p, d, unit)
    if not related:
        return main
    return main.with_related(_guarantee_one(s, c, t, p, d, "interaction" if unit == "edge" else "edge"))


def calibrate_sigma(epsilon: float, delta: float, C: float, T: int, passes: int, unit: Unit = "edge") -> float:
    """Smallest noise std sigma such that :func:`guarantee` meets (epsilon, delta) (PLD calibration)."""
    e, d, t, p = check_epsilon(epsilon), check_delta(delta), _check_T(T), _check_passes(passes)
    sens = sensitivity(C, unit)
    return _calibrate(e, d, t * p) * sens


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
