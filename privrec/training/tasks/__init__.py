"""Tasks turn a :class:`~privrec.data.splits.Split` into model batches.

A task owns everything about *inputs*; models own everything about *outputs*; the trainer
and the evaluator only move batches between them. Each task states its scenario — what a
training sample is, what the model may see when it is evaluated, and what is held out —
so two numbers can be compared only when their scenarios match.

========================  =====================================  ==========================================
task                      a training sample                      evaluated on
========================  =====================================  ==========================================
:class:`SequenceTask`     a window of ``max_len`` train items;   each user's held-out item (valid, then
 (SASRec, GRU4Rec;        loss at its last ``stride`` positions  test) ranked from the items before it
 SR-GNN: stride 1)        (``stride=1``: every prefix, RecBole)
:class:`ClozeTask`       a chunk of ``max_len`` train items,    as SequenceTask; the model reads the history
 (BERT4Rec)               each hidden behind [mask] w.p. 0.2;    and a final [mask]
                          inputs may be privacy-filtered
:class:`MergedClozeTask`  as ClozeTask over tokens of merged    as ClozeTask; items scored by their tokens
 (Mu & Lim)               item pairs; labels = true spans
:class:`CrossDomainTask`  per user, target-domain positions      target domain's held-out item from its
 (DASL, PriCDSR)          with an auxiliary row aligned to them  own history and the (published) aux row
:class:`InteractionTask`  a training (user, item) pair with 4    each user's random held-out item (valid,
 (BPR, NeuMF, DMF,        uniform negatives (order ignored)      test) scored from the user id; the model
 HeteroCDR / PriCDR)                                             holds its rows and the published source
:class:`PrefixTask`       every prefix of the first 80% of a     each test prefix (last 20%) ranked from
 (SR-GNN, APGNN, DIPSGNN, user's last ``max_len`` items with its  everything before it, per sample; a random
 EdgeRand, BPR-MF, DPMF;  next item; its graph built by the      10% of training prefixes validates;
 DIPSGNN's protocol)      model (Eq. 4) or read from a release   history not masked
========================  =====================================  ==========================================

Common to all: the split decides the held-out items (:mod:`privrec.data.splits`:
``leave_one_out`` — last item test, second last validation; ``temporal_fraction`` — the
last 20 % test; ``random_holdout`` — two random items, NCF/PriCDR), the validation history is the train part and the test history is
train + validation, the test split is read once after model selection on validation, and
full ranking covers every item (with or without masking the user's history: the
evaluator's protocol, not the task, decides).
"""

from privrec.errors import ParameterError
from privrec.training.tasks.base import SplitEvaluation
from privrec.training.tasks.cloze import ClozeTask, cloze_chunks
from privrec.training.tasks.cross_domain import CrossDomainTask
from privrec.training.tasks.merged import MergedClozeTask, span_labels
from privrec.training.tasks.private import PrivateInputs, private_inputs
from privrec.training.tasks.ratings import InteractionTask
from privrec.training.tasks.windows import WINDOW_MODES, SequenceTask, mean_context, next_item_windows


def task_for(model, split, n_items: int, max_len: int, *, window_mode: str = "all", stride: int | None = None,
             private: PrivateInputs | None = None, trim_padding: bool = False):
    """The single-domain training task a model is trained with (``model.task``): windows for
    SASRec/GRU4Rec, cloze for BERT4Rec (its ``mask_prob``), cloze over merged tokens for
    MergedBERT4Rec (its merges). ``private``: the model reads published (perturbed) histories.
    ``trim_padding``: window batches cut to their longest row (windows models only; see SequenceTask)."""
    kind = getattr(model, "task", "windows")
    if kind == "cloze":
        return ClozeTask(split, n_items, max_len, mask_prob=model.mask_prob, private=private)
    if kind == "merged_cloze":
        return MergedClozeTask(split, n_items, max_len, mask_prob=model.mask_prob, private=private,
                               merges=model.merges)
    if kind == "interactions":
        return InteractionTask(split, n_items)
    if kind == "windows":
        return SequenceTask(split, n_items, max_len, window_mode, stride, private=private, trim_padding=trim_padding)
    if kind == "prefixes":              # one sample per target: its prefix (SR-GNN, DIPSGNN)
        if stride not in (None, 1):
            raise ParameterError(f"{type(model).__name__} trains on every prefix (stride 1); got stride {stride}")
        return SequenceTask(split, n_items, max_len, window_mode, 1, private=private)
    raise ParameterError(f"{type(model).__name__}.task = {kind!r} is not a single-domain training task")

__all__ = ["WINDOW_MODES", "ClozeTask", "CrossDomainTask", "InteractionTask", "MergedClozeTask", "PrivateInputs", "SequenceTask", "SplitEvaluation", "cloze_chunks",
           "mean_context", "next_item_windows", "private_inputs", "span_labels", "task_for"]
