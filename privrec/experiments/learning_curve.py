"""The learning curve of a ``privrec train`` report: training loss and the validation metric that selects the
epoch, per epoch, one line per seed (``learning_curve.png`` beside ``results.md``)."""

from __future__ import annotations

from pathlib import Path


def plot(runs: list[dict], metric: str, path: Path) -> bool:
    """Draw ``runs`` (each with ``seed`` and ``fit.history``: epoch, loss, valid metrics) into ``path``; False
    (nothing written) where no run has a history."""
    runs = [r for r in runs if (r.get("fit") or {}).get("history")]
    if not runs:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.6))
    for r in runs:
        hist = r["fit"]["history"]
        epochs = [h["epoch"] for h in hist]
        left.plot(epochs, [h.get("loss") for h in hist], label=f"seed {r['seed']}")
        valid = [(h["epoch"], h["valid"][metric]) for h in hist if metric in (h.get("valid") or {})]
        if valid:
            line, = right.plot(*zip(*valid), marker=".", label=f"seed {r['seed']}")
            best = r["fit"].get("best_epoch")
            if best in dict(valid):
                right.axvline(best, color=line.get_color(), alpha=0.3, linestyle=":")
    left.set(xlabel="epoch", ylabel="training loss", title="loss")
    right.set(xlabel="epoch", ylabel=f"validation {metric}", title=f"validation {metric} (dotted: selected epoch)")
    for ax in (left, right):
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)
    return True
