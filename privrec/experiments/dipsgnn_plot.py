"""DIPSGNN's Figs. 3–7 analogs: test Recall@20 against ε₂, ε₁, T and C (EdgeRand and DIPSGNN), and the
ablation bars; every private point annotated with its true ε (edge level)."""

from __future__ import annotations

import textwrap
from pathlib import Path

TITLES = {"fig3_epsilon2": "Fig. 3: ε₂ (point label: true edge-level ε of the run)",
          "fig4_epsilon1": "Fig. 4: ε₁ (point label: true edge-level ε of the run)",
          "fig5_steps": "Fig. 5: propagation steps T (point label: true edge-level ε of the run)",
          "fig6_clip": "Fig. 6: clip C (DIPSGNN; point label: true edge-level ε of the run)",
          "fig7_ablation": "Fig. 7: ablation (Nonp: DIPSGNN at ε = ∞, Priv: DIPSGNN; -U: user ids, no features)"}
XLABELS = {"fig3_epsilon2": "ε₂ as the paper states it (per pass for DIPSGNN, one release for EdgeRand)",
           "fig4_epsilon1": "ε₁ of the user features (LDP)", "fig5_steps": "T", "fig6_clip": "C"}


def plot_figures(res: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    names = [n for n in TITLES if any(p["summary"] for p in res["sweeps"].get(n, []))]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names):
        pts = [p for p in res["sweeps"][name] if p["summary"]]
        if name == "fig7_ablation":
            ax.bar([p["method"] for p in pts], [p["summary"]["test"]["R@20"]["mean"] for p in pts],
                   yerr=[p["summary"]["test"]["R@20"]["std"] for p in pts])
        for method in dict.fromkeys(p["method"] for p in pts if name != "fig7_ablation"):
            mine = sorted(((p["value"], p) for p in pts if p["method"] == method), key=lambda t: t[0])
            xs, ys = [v for v, _ in mine], [p["summary"]["test"]["R@20"]["mean"] for _, p in mine]
            ax.errorbar(xs, ys, yerr=[p["summary"]["test"]["R@20"]["std"] for _, p in mine], marker="o", label=method)
            for x, y, (_, p) in zip(xs, ys, mine):
                true = p["summary"]["privacy"]["true"]
                if true is not None:
                    ax.annotate(f"{true:.3g}", (x, y), fontsize=7, textcoords="offset points", xytext=(0, 6),
                                ha="center")
            ax.legend(fontsize=8)
        ax.margins(y=0.15)                          # room for the labels above the top points
        ax.set_title("\n".join(textwrap.wrap(TITLES[name], 44)), fontsize=9)     # one line in the report
        if name in XLABELS:
            ax.set_xlabel(XLABELS[name], fontsize=8)
        ax.set_ylabel("Recall@20 (%), test")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plots(res: dict) -> dict:
    """name → writer(path), for :func:`privrec.experiments.report.save_report`."""
    if not any(p["summary"] for pts in res.get("sweeps", {}).values() for p in pts):
        return {}
    return {"figs3-7.png": lambda path: plot_figures(res, path)}
