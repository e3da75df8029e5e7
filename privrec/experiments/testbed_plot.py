"""How the transfer an auxiliary domain carries grows as the target gets sparser: the model-free probe
(:mod:`privrec.evaluation.transfer_probe`) on every registered testbed, one panel per direction."""

from __future__ import annotations

from pathlib import Path

RANKERS = (("through raw aux", "o-", "tab:blue"), ("own-domain", "s--", "tab:green"), ("popularity", "^:", "grey"),
           ("through noise", "x-.", "tab:red"))


def plot(curves: dict[str, dict[str, dict]], path: Path) -> None:
    """``curves[direction][testbed] = probe result``; testbeds in the order given (densest first)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 3.8), squeeze=False)
    for ax, (direction, by_bed) in zip(axes[0], curves.items()):
        beds = list(by_bed)
        for name, style, color in RANKERS:
            ys = [by_bed[b]["rankers"].get(name, {}).get("hr@10") for b in beds]
            if any(y is not None for y in ys):
                ax.plot(range(len(beds)), ys, style, color=color, label=name)
        ax.set_xticks(range(len(beds)), beds)
        ax.set_xlabel("testbed (target sparser to the right)")
        ax.set_ylabel("HR@10, full ranking, test users")
        ax.set_title(direction)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
