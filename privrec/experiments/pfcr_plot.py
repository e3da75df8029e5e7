"""PFCR's Fig. 3 analog: test Recall@10 of the federated model (PFCR-D, no prompt) against the paper's ε and the buckets b, each point
labelled with the true ε per client, and validation Recall@10 against the federated round t."""

from __future__ import annotations

from pathlib import Path


def plot_fig3(res: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    f3, domains = res["fig3"], res["domains"]
    fig, axes = plt.subplots(1, 3, figsize=(12.6, 3.8))
    for ax, axis, label in ((axes[0], "epsilon", "paper's ε"), (axes[1], "buckets", "buckets b")):
        pts = sorted(f3["points"][axis], key=lambda p: p[axis])
        for d in domains:
            xs, ys = [p[axis] for p in pts], [p["test"][d]["mean"] for p in pts]
            ax.plot(xs, ys, marker="o", label=d)
            for x, y, p in zip(xs, ys, pts):
                if p["true"] is not None:
                    ax.annotate(f"{p['true']:.3g}", (x, y), fontsize=7, textcoords="offset points", xytext=(0, 6),
                                ha="center")
        if axis == "buckets":
            ax.set_xscale("log", base=2)
        ax.set_xlabel(label)
        ax.set_ylabel("Recall@10 (%), test, PFCR-D")
        ax.set_title(f"{label} (label: true ε per client)", fontsize=9)
        ax.legend(fontsize=8)
    for r in f3["rounds"]:
        axes[2].plot(range(1, len(r["valid"]) + 1), r["valid"], marker="o", label=f"seed {r['seed']}")
    axes[2].set_xlabel("round t")
    axes[2].set_ylabel("Recall@10 (%), validation")
    axes[2].set_title("rounds (paper codec, FedAvg; mean over clients)", fontsize=9)
    if f3["rounds"]:
        axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plots(res: dict) -> dict:
    """name → writer(path), for :func:`privrec.experiments.report.save_report`."""
    f3 = res.get("fig3") or {}
    if not (f3.get("rounds") or any(f3.get("points", {}).values())):
        return {}
    return {"fig3.png": lambda path: plot_fig3(res, path)}
