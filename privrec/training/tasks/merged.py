"""Cloze training over a merged vocabulary (Mu & Lim §3.2, Eq. 8 with Eq. 5).

What the paper leaves open, and what privrec does:

* **Inputs.** The model reads token sequences: each user's (published, perturbed) items
  segmented by the learned merges (:meth:`privrec.data.pair_merging.PairMerges.encode`).
  ``max_len`` counts tokens, so a window of L tokens covers more than L items.
* **Labels.** A token covers a span of positions; its label is the *true* items of that span
  ("we do not apply randomised response to labels"): the composite token whose expansion equals
  the true span if the vocabulary has one, otherwise the true span's first item. (A span of the
  perturbed input is usually, but not always, a span of the true sequence that was merged too.)
* **Chunks and masks** as :class:`~privrec.training.tasks.ClozeTask`, over token positions;
  the [mask] token is ``vocab_size + 1``.
* **Evaluation.** The model reads the token-encoded history followed by [mask]; the score of an
  item is the log of the total probability of the tokens that start with it
  (:class:`privrec.models.bert4rec.MergedBERT4Rec`), so ranking is over single items as for every
  other model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privrec.data.pair_merging import PairMerges
from privrec.data.sequences import Sequences
from privrec.errors import ParameterError
from privrec.training.tasks.cloze import ClozeTask, cloze_chunks

_BASE = np.uint64(0x9E3779B97F4A7C15)


def _expansion_matrix(merges: PairMerges) -> tuple[np.ndarray, np.ndarray]:
    """(vocab + 1, longest) items of each token, 0-padded on the right, and each token's length."""
    _, seqs = merges.expansion_table
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    out = np.zeros((len(seqs), max(1, int(lengths.max()))), dtype=np.int64)
    for t, s in enumerate(seqs):
        out[t, :len(s)] = s
    return out, lengths


def _hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each 0-padded row (collisions are checked by the caller)."""
    h = np.zeros(len(rows), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(rows.shape[1]):
            h = h * _BASE + rows[:, j].astype(np.uint64)
    return h


def span_labels(merges: PairMerges, tokens: Sequences, labels: Sequences) -> Sequences:
    """Per token of ``tokens`` (an encoding of a sequence position-aligned with ``labels``), the
    token of the true span it covers if the vocabulary has it, else the span's first true item."""
    table, tok_len = _expansion_matrix(merges)
    span = tok_len[tokens.items]
    covered = np.bincount(tokens.row_ids(), weights=span, minlength=tokens.n_rows) if tokens.n_rows else span
    if tokens.n_rows != labels.n_rows or not np.array_equal(covered.astype(np.int64), labels.lengths):
        raise ParameterError("the token sequences do not cover the label sequences position for position")
    start = np.cumsum(span) - span                                   # absolute item position of each token
    out = labels.items[start].astype(np.int64)                       # default: the true first item
    multi = np.flatnonzero(span > 1)
    if len(multi):
        width = table.shape[1]
        cols = np.arange(width)
        pos = start[multi, None] + cols[None, :]
        truth = np.where(cols[None, :] < span[multi, None], labels.items[np.minimum(pos, len(labels.items) - 1)], 0)
        composite = np.arange(merges.n_items + 1, merges.vocab_size + 1)
        keys = _hash(table[composite])
        order = np.argsort(keys, kind="stable")
        keys, composite = keys[order], composite[order]
        h = _hash(truth)
        at = np.minimum(np.searchsorted(keys, h), len(keys) - 1)
        cand = composite[at]
        exact = (keys[at] == h) & (table[cand] == truth).all(1)      # verified: no hash collision accepted
        out[multi[exact]] = cand[exact]
    return Sequences(tokens.indptr, out.astype(np.int32))


@dataclass
class MergedClozeTask(ClozeTask):
    """:class:`ClozeTask` over the token vocabulary of ``merges`` (see the module doc)."""

    merges: PairMerges | None = None

    def __post_init__(self) -> None:
        if self.merges is None:
            raise ParameterError("MergedClozeTask needs the learned merges (privrec.data.pair_merging.learn_merges)")
        if self.merges.n_items != self.n_items:
            raise ParameterError(f"the merges were learned over {self.merges.n_items} items, the data has {self.n_items}")
        super().__post_init__()
        self._read = {stage: self.merges.encode(seqs) for stage, seqs in self._read.items()}   # tokens

    @property
    def mask_token(self) -> int:
        return self.merges.vocab_size + 1

    def _chunks(self, labels: Sequences, inputs: Sequences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tokens = self.merges.encode(inputs)
        return cloze_chunks(span_labels(self.merges, tokens, labels), tokens, self.max_len)

    def describe(self) -> str:
        return f"{super().describe()}; {self.merges.vocab_size:,} tokens ({len(self.merges.left):,} merged pairs)"
