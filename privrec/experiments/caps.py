"""Epoch caps and early stopping of finished runs: did a recorded run stop by patience or on its cap,
and does it count under this invocation's cap (a run that ended on a lower cap is continued)?

Pure functions of a run's ``fit`` record (``best_epoch``, ``epochs_run``, ``stopped_early`` and, for a run
made of several trainings, ``parts``); used by the runner to decide what to retrain and by the reports
to mark capped cells."""

from __future__ import annotations

RISING_WINDOW = 10      # under a fixed budget, a best epoch among the last this many validations may still rise


def train_cap(train) -> tuple[int, int | None, int]:
    """(epoch cap, patience, eval_every) of a :class:`~privrec.training.trainer.TrainConfig` (patience
    None: no early stopping, a fixed budget)."""
    return train.epochs, train.patience, train.eval_every


def trained_parts(fit: dict) -> list[dict]:
    """The trainings of a run made of several (``fit["parts"]``: per domain, prompt tuning, ...) that
    ran epochs; empty for a run that is one training."""
    return [p for p in (fit.get("parts") or {}).values() if isinstance(p, dict) and "epochs_run" in p]


def stopped_early(fit: dict, patience: int | None, eval_every: int = 1) -> bool:
    """Did early stopping (not the epoch cap) end this run? A run of several trainings did iff each of
    them did. Records written before the trainer stored the flag are judged from best epoch, epochs
    run and patience (never, under patience None)."""
    parts = trained_parts(fit)
    if parts:
        return all(stopped_early(p, patience, eval_every) for p in parts)
    if "stopped_early" in fit:
        return bool(fit["stopped_early"])
    if patience is None:
        return False
    return fit["epochs_run"] // eval_every - fit["best_epoch"] // eval_every >= patience


def may_still_improve(fit: dict, patience: int | None, eval_every: int = 1) -> bool:
    """Might more epochs have helped this run (a report's † mark)? Under early stopping: the cap, not
    patience, ended it. Under a fixed budget (patience None): its best epoch is among the last
    :data:`RISING_WINDOW` validations. A run of several trainings: any of them."""
    parts = trained_parts(fit)
    if parts:
        return any(may_still_improve(p, patience, eval_every) for p in parts)
    if patience is not None:
        return not stopped_early(fit, patience, eval_every)
    return fit["epochs_run"] // eval_every - fit["best_epoch"] // eval_every < RISING_WINDOW


def reusable(fit: dict, cap: tuple[int, int | None, int]) -> bool:
    """A finished run counts under epoch cap ``cap[0]`` iff it stopped early within it, or it ran to
    exactly this cap (a run that hit a lower cap is continued from its saved state). A run of several
    trainings counts unless one of them ended on a cap below this one (its parts may have run under
    different caps, e.g. pre-training and tuning, so only a capped part short of the cap is redone)."""
    epochs, patience, every = cap
    parts = trained_parts(fit)
    if parts:
        return all(stopped_early(p, patience, every) or p["epochs_run"] >= epochs for p in parts)
    n = fit["epochs_run"]
    return n <= epochs if stopped_early(fit, patience, every) else n == epochs


def epochs_run(fit: dict, cap: int | None = None) -> int:
    """Epochs of a run: of its longest training when it has several (with ``cap``: of its shortest training
    that ended on a cap below ``cap``, the one a higher cap continues)."""
    parts = trained_parts(fit)
    if not parts:
        return int(fit["epochs_run"])
    short = [p["epochs_run"] for p in parts if cap is not None and not p.get("stopped_early", True)
             and p["epochs_run"] < cap]
    return min(short) if short else max(p["epochs_run"] for p in parts)
