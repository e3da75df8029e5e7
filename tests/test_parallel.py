"""The executor's refusals and promises that need no cluster (the cluster itself: test_ray_cluster.py)."""

from __future__ import annotations

import os

import pytest

from privrec.errors import ParameterError
from privrec.experiments.parallel import Backend, RayTarget, run_task
from privrec.experiments.runner import RunSpec
from privrec.utils.repro import source_digest


class _Echo:
    def train(self, spec, state, log):
        return (spec.key, str(state), os.getcwd(), os.environ.get("CUDA_VISIBLE_DEVICES"))


def test_bad_backends_are_refused_with_the_option_to_fix():
    with pytest.raises(ParameterError, match="jobs and threads must be >= 1"):
        Backend(jobs=0)
    with pytest.raises(ParameterError, match="--ray takes a cluster address"):
        RayTarget(" ")
    with pytest.raises(ParameterError, match="--gpus-per-run must be between 0 and 64"):
        RayTarget("auto", gpus=-1)
    assert not Backend().uses_ray and Backend(jobs=2).uses_ray and Backend(ray=RayTarget()).uses_ray
    assert "1 CPU and 0.5 GPU each" in Backend(ray=RayTarget("10.0.0.1:6379", 0.5)).describe(3)


def test_a_task_runs_in_the_drivers_folder_and_never_on_a_gpu_it_did_not_ask_for(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    here, threads = os.getcwd(), torch.get_num_threads()
    try:
        key, state, cwd, visible = run_task(_Echo(), RunSpec("k", 0, {}), str(tmp_path / "o.state" / "k.pt"), 1,
                                            str(tmp_path), 0.0, source_digest())
    finally:
        os.chdir(here)
        torch.set_num_threads(threads)
    assert (key, cwd, visible) == ("k", str(tmp_path), "")


def test_a_task_refuses_another_privrec_and_an_output_it_cannot_reach(tmp_path):
    spec = RunSpec("k", 0, {})
    with pytest.raises(ParameterError, match="runs another privrec"):
        run_task(_Echo(), spec, str(tmp_path / "o.state" / "k.pt"), 1, str(tmp_path), 1.0, "0" * 16)
    with pytest.raises(ParameterError, match="cannot reach .* put --out on storage every node mounts"):
        run_task(_Echo(), spec, str(tmp_path / "gone" / "o.state" / "k.pt"), 1, str(tmp_path), 1.0, source_digest())


def test_gpus_per_run_needs_ray():
    from privrec.cli import main

    assert main(["reproduce", "pricdr", "--quick", "--gpus-per-run", "1", "--report-only"]) == 2
