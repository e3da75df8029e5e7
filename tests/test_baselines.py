"""``privrec reproduce baselines``: the grid on S3Rec's files and its comparison with the published rows."""

from __future__ import annotations

import json
import math

import pytest

from privrec.data.registry import get_spec
from privrec.errors import ParameterError
from privrec.experiments import baselines as B
from privrec.experiments.baselines_report import PUBLISHED, compare, sampling_error


def test_the_comparison_with_a_published_row_counts_one_runs_sampling_error():
    assert sampling_error(0.0605, 22363) == pytest.approx(math.sqrt(0.0605 * 0.9395 / 22363))
    se = sampling_error(0.0605, 22363)                      # SASRec's Beauty HR@10: 0.0016 per run
    assert compare(0.0610, 0.0605, 22363)["verdict"] == "at or above"
    assert compare(0.0605 - 1.5 * se, 0.0605, 22363)["verdict"] == "within sampling error below"
    assert compare(0.0605 - 2.5 * se, 0.0605, 22363)["verdict"] == "below"
    assert set(PUBLISHED) == set(B.DATASETS) and all(set(v) == set(B.MODELS) for v in PUBLISHED.values())
    with pytest.raises(ParameterError, match="datasets are beauty, sports, toys, yelp"):
        B.BaselinesConfig(datasets=("ml-1m",))


def test_a_quick_grid_on_beauty_trains_resumes_and_reports(tmp_path, monkeypatch):
    from privrec.data.fetch import fetch, local_copy
    from privrec.training.trainer import TrainConfig

    src = local_copy(get_spec("beauty"))
    if src is None:
        pytest.skip("no local copy of beauty (../shared/datasets or $PRIVREC_DATA_DIRS)")
    monkeypatch.setenv("PRIVREC_CACHE", str(tmp_path / "cache"))
    fetch("beauty", source=src)
    cfg = B.BaselinesConfig(datasets=("beauty",), models=("sasrec",), seeds=(0,), max_users=300,
                            train=TrainConfig(epochs=1, batch_size=256, patience=1, select_metric="ndcg@20",
                                              grad_clip=None, progress=False))
    res = B.reproduce(cfg, tmp_path / "out", log=lambda m: None)
    (row,) = res["summary"]
    assert row["dataset"] == "beauty" and row["test_users"] == 300 and "published" not in row   # quick: no verdict
    assert set(row["full"]) >= {"hr@10", "ndcg@20"} and set(row["sampled"]) >= {"hr@10"}
    assert (tmp_path / "out" / "results.md").read_text().count("| beauty | sasrec |") == 2
    lines = (tmp_path / "out.progress.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["run"]["labels"] == {"dataset": "beauty", "model": "sasrec"}
    logs = []
    B.reproduce(cfg, tmp_path / "out", log=logs.append)                # resumed: nothing retrains
    assert any("resuming: 1 finished runs" in m for m in logs)
