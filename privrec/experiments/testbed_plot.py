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


def plot_gates(reports: list[dict], path: Path) -> None:
    """The gates of one pipeline's reports on several testbeds: per direction (and first metric), the mean
    paired difference ± std of the non-private model over its single-domain counterpart and over its
    pure-noise control, one point per report in the order given."""
    import matplotlib.pyplot as plt

    from privrec.experiments.gate import gate_rows

    rows = gate_rows(reports)
    wheres = list(dict.fromkeys(r["where"] for r in rows))
    fig, axes = plt.subplots(1, max(len(wheres), 1), figsize=(5.2 * max(len(wheres), 1), 3.8), squeeze=False)
    for ax, where in zip(axes[0], wheres):
        mine = [r for r in rows if r["where"] == where]
        metric = mine[0]["metric"]
        mine = [r for r in mine if r["metric"] == metric]
        beds = [r["testbed"] for r in mine]
        for key, style, label in (("positive", "o-", "minus its single-domain model"),
                                  ("information", "s--", "minus itself on pure noise")):
            checks = [r["gate"][key] for r in mine]
            xs = [i for i, c in enumerate(checks) if c]
            ax.errorbar(xs, [checks[i]["difference"]["mean"] for i in xs],
                        yerr=[checks[i]["difference"]["std"] for i in xs], fmt=style, capsize=3,
                        label=f"{mine[0]['gate']['cross']} {label}")
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(range(len(beds)), beds)
        ax.set_xlabel("testbed (as given)")
        ax.set_ylabel(f"paired difference, {metric}")
        ax.set_title(where)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)
