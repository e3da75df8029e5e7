"""PriCDSR's privacy-utility plot: NDCG@10 (sampled) against ε per swept direction, each seed shown."""

from __future__ import annotations

from pathlib import Path


def plot(res: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    cfg = res["config"]
    directions = cfg["table3_directions"] or cfg["directions"]       # no ε sweep: plot Table II's points
    fig, axes = plt.subplots(1, len(directions), figsize=(5.5 * len(directions), 4), squeeze=False)
    for ax, direction in zip(axes[0], directions):
        target, aux = direction.split("<-")
        rel = [s for s in res["summary"] if s["target"] == target and s["aux"] == aux]
        pts = sorted((s["epsilon"], s["test"]["ndcg@10 (sampled)"]) for s in rel if s["variant"] == "PriCDSR-DASL")
        if pts:
            xs = [p[0] for p in pts]
            ax.errorbar(xs, [p[1]["mean"] for p in pts], yerr=[p[1]["std"] for p in pts], marker="o",
                        label="PriCDSR-DASL (mean ± std)")
            each = [(r["labels"]["epsilon"], r["metrics"]["sampled"]["ndcg@10"]) for r in res["runs"]
                    if (r["labels"]["target"], r["labels"]["aux"], r["labels"]["variant"]) == (target, aux,
                                                                                              "PriCDSR-DASL")]
            ax.scatter([e for e, _ in each], [v for _, v in each], marker="x", color="tab:blue", alpha=0.5,
                       label="one seed")      # a mean ± std hides a bimodal spread
            ax.set_xscale("log")
        for variant, style, color in (("DASL", "--", "k"), ("DASL-single", ":", "grey"),
                                      ("Noise (control)", "-.", "tab:red")):
            ref = next((s for s in rel if s["variant"] == variant), None)
            if ref:
                ax.axhline(ref["test"]["ndcg@10 (sampled)"]["mean"], linestyle=style, color=color,
                           label=variant + (" (DASL on noise rows)" if variant == "Noise (control)" else ""))
        ax.set_xlabel("ε of the mechanism (paper's budget; certified ε-SDP = 2ε)")
        ax.set_ylabel("NDCG@10 (sampled, test)")
        ax.set_title(f"{target} ← {aux}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
