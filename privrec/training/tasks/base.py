"""What the evaluator reads from every task built on a :class:`~privrec.data.splits.Split`."""

from __future__ import annotations

from privrec.data.sequences import Sequences
from privrec.data.splits import Split


class SplitEvaluation:
    """What the evaluator reads from a task with a ``split`` and per-stage ``_history``."""

    split: Split
    _history: dict[str, Sequences]

    def stage_targets(self, stage: str) -> Sequences:
        return self.split.targets(stage)

    def stage_history(self, stage: str) -> Sequences:
        return self._history[stage]

    def train_items(self) -> Sequences:
        return self.split.train
