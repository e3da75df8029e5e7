"""What each paper evaluates that its privrec reproduction does not run, and why (issue 77, item 5).

Every reproduction report ends its results with this list, so a reader never mistakes the analog for the
paper's own experiment: the paper's datasets that are not on this machine (or not yet run), and the methods
of its result tables that privrec does not implement. Names are the papers' own (their tables and figures,
checked by hand against ``../shared/papers``); a line leaves this list when the run lands.
"""

from __future__ import annotations

from dataclasses import dataclass

SHARED = "../shared/datasets"
STAND_IN = "MovieLens-1M split by first genre (action / drama) stands in (docs/testbeds.md)"


@dataclass(frozen=True)
class NotRun:
    kind: str          # "dataset" or "method"
    name: str          # as the paper writes it
    where: str         # the paper's table / figure
    why: str


NOT_RUN: dict[str, tuple[NotRun, ...]] = {
    "pricdsr": (
        NotRun("dataset", "Amazon Movie, CD, Book (six target ← auxiliary pairs)", "Tables I–III",
               f"not distributed in the paper's overlap-filtered form (10,929 shared users) and not in {SHARED}; "
               f"{STAND_IN}"),
    ),
    "pricdr": (
        NotRun("dataset", "Amazon Music→Book, Movie→Music, Movie→Book", "Table 1, Figs. 2–5",
               f"the paper's filtered Amazon pairs are not in {SHARED}; {STAND_IN}"),
        NotRun("dataset", "Douban Book→Music, Movie→Book, Movie→Music", "Table 1, Figs. 2–5",
               f"not in {SHARED} and not on the package index"),
        NotRun("method", "CoNet", "Table 1", "not implemented; DDTCDR stands for the cross-domain baselines"),
        NotRun("method", "DARec", "Table 1", "not implemented; DDTCDR stands for the cross-domain baselines"),
        NotRun("method", "ETL", "Table 1", "not implemented; DDTCDR stands for the cross-domain baselines"),
    ),
    "baselines": (
        NotRun("dataset", "Meituan, LastFM", "all-items table", f"not in {SHARED}"),
        NotRun("method", "PopRec, Caser, HGN, GRU4Rec_F, SASRec_F, FDSA, S3-Rec", "all-items table",
               "not implemented: privrec reproduces the three baselines its papers train (SASRec, GRU4Rec, BERT4Rec)"),
    ),
    "rr": (
        NotRun("dataset", "Amazon Beauty", "Fig. 1",
               f"in {SHARED} and runnable (`privrec reproduce rr --dataset beauty`: alternatives from its items' "
               "attribute ids, the file has no titles) but its 3-seed grid is not yet run (issue 77, item 3)"),
        NotRun("dataset", "Steam", "Fig. 1", f"not in {SHARED}"),
        NotRun("dataset", "MovieLens 20M", "Figs. 1–2",
               "not run: 20 M interactions, 20x ML-1M, whose grid alone took 48 CPU-hours on this project's 2-core "
               "machine; ML-1M, the paper's other MovieLens set, is run"),
    ),
    "dipsgnn": (
        NotRun("dataset", "Yelp", "Tables 1–2, Figs. 3, 5, 6",
               f"in {SHARED} (privrec datasets fetch yelp) but not yet run; the file has no user features, so only "
               "the paper's -U variants apply (issue 77, item 4)"),
        NotRun("dataset", "Tmall", "Tables 1–2, Figs. 3, 5, 6", f"not in {SHARED}"),
        NotRun("method", "HRNN", "Table 2", "not implemented (GRU4Rec, its session-only core, is run)"),
        NotRun("method", "LightGCN", "Table 2", "not implemented"),
        NotRun("method", "DPMF_exp", "Table 2",
               "not run: it perturbs explicit ratings; privrec's DPMF row is the implicit-feedback variant "
               "(DPMF_imp) on the same sequences as every other row"),
    ),
    "pfcr": (
        NotRun("dataset", "Office-Arts (Amazon)", "Tables 1–3",
               f"the paper's text-filtered Amazon Office / Arts files are not in {SHARED}; ML-1M's action and "
               "drama platforms (titles from the dataset) stand in"),
        NotRun("dataset", "OnlineRetail-Pantry", "Table 1, Fig. 3", f"not in {SHARED}"),
        *(NotRun("method", m, "Table 1", "not implemented (single-domain GRU4Rec, SASRec, BERT4Rec are run)")
          for m in ("CCDR", "RecGURU", "FDSA", "S³-Rec", "ZESRec", "VQRec")),
        NotRun("method", "PFCR-VFD", "Table 2",
               "not run as its own row: the paper's PFCR-VFD numbers equal its SASRec row in Table 1, and SASRec "
               "is run"),
    ),
}


def entries(paper: str) -> list[dict]:
    """The paper's not-run list as plain dicts (for results.json)."""
    return [{"kind": e.kind, "name": e.name, "where": e.where, "why": e.why} for e in NOT_RUN.get(paper, ())]


def markdown(paper: str) -> list[str]:
    """The report section naming what the paper evaluates and this report does not run."""
    from privrec.experiments.report import markdown_table

    rows = [[e.kind, e.name, e.where, e.why] for e in NOT_RUN.get(paper, ())]
    if not rows:
        return []
    return ["", "## The paper's datasets and methods not run here", "",
            markdown_table(["kind", "paper's name", "paper's table / figure", "why"], rows), ""]
