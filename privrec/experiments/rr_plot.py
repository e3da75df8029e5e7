"""Mu & Lim's Fig. 1 analog (HR@1 and NDCG@5 against ε per method, non-private level dashed, every
seed shown) and Fig. 2 analog (RR-BERT4Rec against the position of the strongly obfuscated window)."""

from __future__ import annotations

from pathlib import Path

from privrec.experiments.rr_report import PAPER, WINDOW_COLS


def _points(res: dict, method: str, alt, pos=None) -> list[tuple]:
    return sorted((s["epsilon"], s) for s in res["summary"] if s["method"] == method and s["epsilon"] is not None
                  and s["alternatives"] == alt and s["position"] == pos)


def plot_fig1(res: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    cfg = res["config"]
    fig, axes = plt.subplots(1, len(PAPER["metrics"]), figsize=(11, 4), squeeze=False)
    colours = dict(zip(cfg["methods"], plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, col in zip(axes[0], PAPER["metrics"]):
        for method, colour in colours.items():
            pts = [(e, s) for e, s in _points(res, method, cfg["alternatives"]) if e in cfg["epsilons"]]
            if pts:
                ax.errorbar([e for e, _ in pts], [s["test"][col]["mean"] for _, s in pts],
                            yerr=[s["test"][col]["std"] for _, s in pts], marker="o", color=colour, label=method)
                seeds = [(r["labels"]["epsilon"], r["metrics"]["sampled"][col.split(" ")[0]]) for r in res["runs"]
                         if r["labels"]["method"] == method and r["labels"]["epsilon"] in cfg["epsilons"]
                         and r["labels"]["alternatives"] == cfg["alternatives"] and r["labels"]["position"] is None]
                ax.scatter([e for e, _ in seeds], [v for _, v in seeds], marker="x", color=colour, alpha=0.5)
            ref = next((s for s in res["summary"] if s["method"] == method and s["epsilon"] is None), None)
            if ref:
                ax.axhline(ref["test"][col]["mean"], linestyle="--", color=colour, alpha=0.7)
        ax.set_xscale("log")
        ax.set_xlabel("ε (posterior-odds bound per whole history)")
        ax.set_ylabel(f"{col}, test")
        ax.set_title(f"{col}: dashed = non-private, x = one seed")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_fig2(res: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    cfg = res["config"]
    rows = sorted((s["position"], s) for s in res["summary"] if s["method"] == "RR-BERT4Rec"
                  and s["position"] is not None and s["epsilon"] == cfg["positional_epsilon"])
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    seeds = {r["seed"] for r in res["runs"] if r["labels"]["position"] is not None}
    flat = [r["metrics"]["sampled"] for r in res["runs"] if r["labels"]["method"] == "RR-BERT4Rec"
            and r["labels"]["position"] is None and r["labels"]["epsilon"] == cfg["positional_epsilon"]
            and r["labels"]["alternatives"] == cfg["alternatives"] and r["seed"] in seeds]   # Fig. 1, same seeds
    for col, window, colour in zip(PAPER["metrics"], WINDOW_COLS, colours):
        ax.errorbar([p for p, _ in rows], [s["test"][col]["mean"] for _, s in rows],
                    yerr=[s["test"][col]["std"] for _, s in rows], marker="o", color=colour, label=f"{col}, all users")
        win = [(p, s) for p, s in rows if window in s["test"]]
        if win:                             # the users whose history got a window: where a position effect lives
            ax.errorbar([p for p, _ in win], [s["test"][window]["mean"] for _, s in win],
                        yerr=[s["test"][window]["std"] for _, s in win], marker="s", linestyle="--", color=colour,
                        label=window.replace("sampled, ", ""))
        if flat:
            metric = col.split(" ")[0]
            ax.axhline(sum(m[metric] for m in flat) / len(flat), linestyle=":", color=colour, alpha=0.7)
    ax.set_xlabel("window position (0 = oldest items, 1 = most recent)")
    ax.set_ylabel("test (sampled, 100 negatives)")
    ax.set_title(f"RR-BERT4Rec, ε = {cfg['positional_epsilon']:g}, p1 = {cfg['p_outside']} "
                 "(dotted: no window, same seeds)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plots(res: dict) -> dict:
    """The plots a report has data for (name → draw function)."""
    out = {}
    if any(s["epsilon"] is not None and s["position"] is None for s in res["summary"]):
        out["fig1_privacy_utility.png"] = lambda p: plot_fig1(res, p)
    if any(s["position"] is not None for s in res["summary"]):
        out["fig2_window_position.png"] = lambda p: plot_fig2(res, p)
    return out
