"""PriCDR's Figs. 2–5 analogs: test sampled NDCG@10 against ε, n′, SJLT density sp and the source's
kept fraction sd, one panel each; Fig. 2's x axis is the paper's ε. Each point is annotated with its
release's true ε (Fig. 2b: with its signal share, its x axis being the true ε). The panels share one y scale."""

from __future__ import annotations

from pathlib import Path

from privrec.experiments.pricdr_report import CLAIM_METRIC

TITLES = {"fig2_epsilon": "Fig. 2: paper's ε (label: true ε)",
          "fig2b_true_epsilon": "Fig. 2b: true ε (tight w; label: signal share)",
          "fig3_n_prime": "Fig. 3: n′ (PriCDR-J; label: true ε)",
          "fig4_sp": "Fig. 4: SJLT density sp (PriCDR-S; label: true ε)",
          "fig5_sd": "Fig. 5: source kept fraction sd (label: true ε)"}
MIN_SPAN = 0.05   # NDCG@10: several times Table 1's seed-to-seed spread (0.006-0.015)


def plot_sweeps(res: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    figs = [f for f in TITLES if any(r["summary"] for r in res["sweeps"].get(f, []))]
    fig, axes = plt.subplots(1, len(figs), figsize=(4.2 * len(figs), 3.8), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], figs):
        rows = res["sweeps"][name]
        for method in dict.fromkeys(r["method"] for r in rows):
            pts = sorted((r["value"], r) for r in rows if r["method"] == method and r["summary"])
            xs = [v for v, _ in pts]
            ys = [r["summary"]["test"][CLAIM_METRIC]["mean"] for _, r in pts]
            ax.errorbar(xs, ys, yerr=[r["summary"]["test"][CLAIM_METRIC]["std"] for _, r in pts], marker="o",
                        label=method)
            if name != "fig2b_true_epsilon":
                for x, y, (_, r) in zip(xs, ys, pts):
                    if r.get("true_epsilon") is not None:
                        ax.annotate(f"{r['true_epsilon']:.2g}", (x, y), fontsize=7, textcoords="offset points",
                                    xytext=(0, 6), ha="center")
            if name == "fig2b_true_epsilon":
                for x, y, (_, r) in zip(xs, ys, pts):
                    if r.get("signal_share") is not None:
                        ax.annotate(f"{r['signal_share']:.2g}", (x, y), fontsize=7, textcoords="offset points",
                                    xytext=(0, 6), ha="center")
        if name in ("fig2_epsilon", "fig2b_true_epsilon"):
            ax.set_xscale("log", base=2)
        ax.set_title(TITLES[name], fontsize=9)
        ax.set_ylabel(f"{CLAIM_METRIC}, test")
        ax.legend(fontsize=8)
    low, high = axes[0][0].get_ylim()             # one y scale for every panel, never under MIN_SPAN tall,
    if high - low < MIN_SPAN:                     # so a one-seed wobble does not fill the panel like a trend
        mid = (low + high) / 2
        axes[0][0].set_ylim(mid - MIN_SPAN / 2, mid + MIN_SPAN / 2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plots(res: dict) -> dict:
    """name → writer(path), for :func:`privrec.experiments.report.save_report`."""
    if not any(r["summary"] for rows in res.get("sweeps", {}).values() for r in rows):
        return {}
    return {"figs2-5_sweeps.png": lambda path: plot_sweeps(res, path)}
