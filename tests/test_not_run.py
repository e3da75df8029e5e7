"""Every reproduction report names the paper's datasets and methods it does not run, with the reason."""

import pytest

from privrec.experiments.not_run import NOT_RUN, entries
from privrec.experiments.report import trailer


@pytest.mark.parametrize("paper", ["pricdsr", "pricdr", "rr", "dipsgnn", "pfcr"])
def test_each_paper_report_lists_what_it_does_not_run(paper):
    lines = trailer({"kind": paper, "seconds": 1.0, "training_seconds": 0.0, "command": "privrec reproduce x"})
    text = "\n".join(lines)
    assert "## The paper's datasets and methods not run here" in text
    assert all(e["why"] and e["where"] and e["kind"] in ("dataset", "method") for e in entries(paper))
    assert all(f"| {e['name']} |" in text for e in entries(paper))


def test_other_reports_have_no_such_section():
    assert "not run here" not in "\n".join(trailer({"kind": "sequential", "seconds": 1.0}))


def test_the_papers_datasets_are_named():
    # the datasets each paper evaluates on and privrec does not (the papers' own names)
    named = {p: " ".join(e.name for e in v if e.kind == "dataset") for p, v in NOT_RUN.items()}
    assert "Amazon Movie" in named["pricdsr"] and "Douban" in named["pricdr"]
    assert all(d in named["rr"] for d in ("Amazon Beauty", "Steam", "MovieLens 20M"))
    assert "Yelp" in named["dipsgnn"] and "Tmall" in named["dipsgnn"]
    assert "Office-Arts" in named["pfcr"] and "OnlineRetail-Pantry" in named["pfcr"]
