"""The shared experiment runner: resume by fingerprint, per-model fingerprints."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from privrec.experiments.runner import RunRecord, RunSpec, execute, progress_path, state_dir, unfinished_states


@dataclass
class Toy:
    """Two models; ``settings[m]`` is read by model m only."""

    settings: dict
    per_model: bool = True
    trained: list = field(default_factory=list)

    def runs(self):
        return [RunSpec(f"{m}|{s}", s, {"model": m}) for m in ("a", "b") for s in (0, 1)]

    def fingerprint(self):
        return f"common-{sorted(self.settings.items())}"

    def cap(self):
        return 1, 1, 1

    def prepare(self, spec, log):
        pass

    def train(self, spec, state, log):
        self.trained.append(spec.key)
        fit = {"best_epoch": 1, "epochs_run": 1, "stopped_early": False}
        return RunRecord(spec.key, spec.seed, dict(spec.labels), fit, {"test": {"x": float(spec.seed)}})


class PerModel(Toy):
    def fingerprint_of(self, spec):
        m = spec.labels["model"]
        return f"common-{m}-{self.settings[m]}"


def test_resume_reuses_runs_of_the_same_fingerprint(tmp_path):
    out = tmp_path / "out"
    first = Toy({"a": 1, "b": 1})
    assert len(execute(first, out, log=lambda m: None).records) == 4 and len(first.trained) == 4
    again = Toy({"a": 1, "b": 1})
    execute(again, out, log=lambda m: None)
    assert again.trained == []
    changed = Toy({"a": 2, "b": 1})                  # one experiment-wide fingerprint: everything reruns
    execute(changed, out, log=lambda m: None)
    assert len(changed.trained) == 4


class CutOff(Toy):
    """Writes each run's state (and, for the last run, a part kept beside it); the last run is cut off."""

    def train(self, spec, state, log):
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_bytes(b"state")
        if spec.key == "b|1":
            state.with_name(state.name + ".done").write_bytes(b"part")
            raise RuntimeError("cut off")
        return super().train(spec, state, log)


def test_unfinished_states_are_the_cut_off_runs_with_their_parts_not_the_capped_finished_ones(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="cut off"):
        execute(CutOff({"a": 1, "b": 1}), out, log=lambda m: None)
    assert len(list(state_dir(out).iterdir())) == 5          # three capped runs keep theirs (a higher cap continues)
    left = unfinished_states(out)
    assert [p.name.split("-", 2)[-1] for p in left] == ["b_1.pt", "b_1.pt.done"]
    assert unfinished_states(tmp_path / "nothing") == []


def test_per_model_fingerprints_redo_only_the_changed_models_runs(tmp_path):
    out = tmp_path / "out"
    execute(PerModel({"a": 1, "b": 1}), out, log=lambda m: None)
    changed = PerModel({"a": 2, "b": 1})
    outcome = execute(changed, out, log=lambda m: None)
    assert sorted(changed.trained) == ["a|0", "a|1"]
    assert len(outcome.records) == 4
    lines = progress_path(out).read_text().splitlines()
    assert len(lines) == 6 and '"common-a-2"' in lines[-1]
    back = PerModel({"a": 1, "b": 1})                 # the earlier setting's runs are still there
    execute(back, out, log=lambda m: None)
    assert back.trained == []


class PerRunCap(Toy):
    def fingerprint(self):                          # epoch caps are not part of a fingerprint
        return "common"

    def cap_of(self, spec):
        return (self.settings[spec.labels["model"]], 1, 1)


def test_per_run_caps_continue_only_the_runs_whose_cap_rose(tmp_path):
    out = tmp_path / "out"
    execute(PerRunCap({"a": 1, "b": 1}), out, log=lambda m: None)   # every run reached its cap of 1 epoch
    higher = PerRunCap({"a": 2, "b": 1})
    logs: list[str] = []
    execute(higher, out, log=logs.append)
    assert sorted(higher.trained) == ["a|0", "a|1"]
    assert any("continued under the cap of 2" in m for m in logs)


def test_a_run_of_several_trainings_is_redone_only_for_a_part_capped_below_the_cap(tmp_path):
    """A multi-part run (``fit["parts"]``, e.g. PFCR's pre-training and tunings, possibly trained under
    different caps) stopped early iff every part did, and counts under a cap unless a part ended on a
    lower one; removing a run's state removes what it kept beside it."""
    from privrec.experiments.caps import epochs_run, reusable, stopped_early
    from privrec.experiments.runner import remove_state

    def part(n, early):
        return {"epochs_run": n, "best_epoch": n - 1, "stopped_early": early}

    mixed = {"stopped_early": True, "epochs_run": 0, "best_epoch": 0,     # written before parts were read
             "parts": {"federation": {"rounds": []}, "A": part(20, False), "A/full": part(8, False),
                       "B": part(16, True)}}
    assert not stopped_early(mixed, 5) and epochs_run(mixed) == 20
    assert reusable(mixed, (8, 5, 1))            # every part reached 8 or stopped early
    assert not reusable(mixed, (12, 5, 1))       # A/full ended on 8 < 12: continue it
    early = {"epochs_run": 0, "best_epoch": 0, "stopped_early": True, "parts": {"A": part(16, True)}}
    assert stopped_early(early, 5) and reusable(early, (8, 5, 1)) and reusable(early, (50, 5, 1))
    state = tmp_path / "k.pt"
    state.write_bytes(b"x")
    (tmp_path / "k.pt.A.done").write_bytes(b"y")
    (tmp_path / "k.pt.federation").mkdir()
    (tmp_path / "other.pt").write_bytes(b"z")
    remove_state(state)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.pt"]


def test_a_smaller_grid_says_which_recorded_runs_its_report_leaves_out(tmp_path):
    out = tmp_path / "out"
    execute(Toy({"a": 1, "b": 1}), out, log=lambda m: None)

    class OnlyA(Toy):
        def runs(self):
            return [r for r in super().runs() if r.labels["model"] == "a"]

    logs: list[str] = []
    outcome = execute(OnlyA({"a": 1, "b": 1}), out, log=logs.append, train_missing=False)
    assert len(outcome.records) == 2
    note = [m for m in logs if m.startswith("note:")]
    assert len(note) == 1 and "2 run(s)" in note[0] and "outside this invocation's grid" in note[0]
    logs.clear()
    execute(Toy({"a": 1, "b": 1}), out, log=logs.append, train_missing=False)   # the full grid: no note
    assert not any(m.startswith("note:") for m in logs)



def test_reports_say_which_runs_finished_on_a_gpu():
    """Runs record where they trained; a report names those that finished on a GPU (older records
    without the field: a CUDA build of torch), and says nothing when every run was on the CPU."""
    from privrec.experiments.provenance import environment_note, trained_on
    from privrec.experiments.runner import Outcome
    from privrec.utils.repro import environment, lock_digest

    env = environment()
    assert env["accelerator"] == trained_on(env)
    cpu = {"lock_sha256": lock_digest(), "torch": "2.13.0+cpu", "accelerator": "cpu"}
    h200 = {**cpu, "torch": "2.11.0+cu130", "accelerator": "NVIDIA H200"}
    legacy = {k: v for k, v in h200.items() if k != "accelerator"}
    recs = [RunRecord(key=k, seed=0, labels={}, fit={}, metrics={}, environment=e)
            for k, e in (("a", cpu), ("b", h200), ("c", legacy))]
    assert [trained_on(r.environment) for r in recs] == ["cpu", "NVIDIA H200", "GPU (torch 2.11.0+cu130)"]
    note = "\n".join(environment_note(Outcome(recs, [], Path("p"), [])))
    assert "2 of 3 runs finished on a GPU" in note and "NVIDIA H200: `b`" in note and "`c`" in note
    assert "`a`" not in note and "another lock" not in note
    assert environment_note(Outcome(recs[:1], [], Path("p"), [])) == []
    drifted = RunRecord(key="d", seed=0, labels={}, fit={}, metrics={},
                        environment={**cpu, "lock_mismatch": ["filelock: lock 4.3.1, installed 4.2.12"]})
    note = "\n".join(environment_note(Outcome([recs[0], drifted], [], Path("p"), [])))
    assert "1 of 2 runs ran with packages other than their lock pins (filelock: lock 4.3.1, installed 4.2.12): `d`" in note
    # a run resumed after a lock bump: its epochs split over two locks, though it finished under this one
    resumed = RunRecord(key="e", seed=0, labels={}, metrics={}, environment=cpu,
                        fit={"epochs_by_lock": {"unrecorded": 34, cpu["lock_sha256"]: 15}})
    whole = RunRecord(key="f", seed=0, labels={}, metrics={}, environment=cpu,
                      fit={"epochs_by_lock": {cpu["lock_sha256"]: 49}})
    note = "\n".join(environment_note(Outcome([resumed, whole], [], Path("p"), [])))
    assert (f"1 of 2 runs trained some epochs under another lock than the one they finished under, or resumed a "
            f"state that did not record its lock: `e` (34 epochs under an unrecorded lock (a state saved before "
            f"states kept it), 15 epochs under {cpu['lock_sha256']})" in note)
    assert "`f`" not in note
    # outside a checkout the trainer counts under "no lock" and the environment records None: nothing to flag
    from privrec.experiments.provenance import lock_spans

    assert lock_spans({"epochs_by_lock": {"no lock": 3}}, None) is None
    # a run of several trainings (PFCR's parts) adds up its parts
    parts = {"parts": {"federation": {"epochs_run": 2, "epochs_by_lock": {"aaaa": 2}},
                       "prompt": {"epochs_run": 3, "epochs_by_lock": {"bbbb": 3}}}}
    assert lock_spans(parts, "bbbb") == "2 epochs under aaaa, 3 epochs under bbbb"
    assert lock_spans({"parts": {"prompt": {"epochs_run": 1, "epochs_by_lock": {"bbbb": 1}}}}, "bbbb") is None
    # a state resumed at another precision (a bf16 run moved to a CPU without bf16 units) is flagged with its epochs
    from privrec.experiments.provenance import precision_spans

    mixed = RunRecord(key="g", seed=0, labels={}, metrics={}, environment=cpu,
                      fit={"epochs_by_precision": {"bf16": 63, "fp32": 20}})
    plain = RunRecord(key="h", seed=0, labels={}, metrics={}, environment=cpu, fit={"epochs_by_precision": {"fp32": 9}})
    note = "\n".join(environment_note(Outcome([mixed, plain], [], Path("p"), [])))
    assert ("1 of 2 runs resumed a state at another forward-pass precision: `g` (63 epochs at bf16, 20 epochs at "
            "fp32)" in note) and "`h`" not in note
    assert precision_spans({}) is None and precision_spans({"epochs_by_precision": {"bf16": 1}}) is None


def test_environment_records_the_lock_pins_this_interpreter_does_not_match():
    """A result says whether it ran on what its lock pins: a changed lock (or a venv built another way)
    shows as the pins that differ, named with both versions; hash and comment lines are not pins."""
    import numpy as np

    from privrec.utils.repro import environment, lock_mismatch, mismatched_pins

    lock = (f"numpy=={np.__version__} \\\n    --hash=sha256:00\n    # via privrec\nnumpy-no-such-pkg==1.0 \\\n"
            "    --hash=sha256:11\nnumpy==0.0.1\n")
    assert mismatched_pins(lock) == ["numpy-no-such-pkg: lock 1.0, installed none",
                                     f"numpy: lock 0.0.1, installed {np.__version__}"]
    assert environment()["lock_mismatch"] == lock_mismatch()
    assert isinstance(lock_mismatch(), list)


def _alive(pid: int) -> bool:
    """Running and not a zombie (a container's pid 1 may never reap an orphan)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_worker_ends_when_its_parent_is_killed(tmp_path):
    """kill -9 of a ``reproduce --jobs N`` process must not leave its trainings running as orphans (the local
    Ray instance shares the driver's fate)."""
    import signal
    import subprocess
    import sys
    import time

    pidfile, state = tmp_path / "worker.pid", tmp_path / "out.state" / "s.pt"
    script = ("import os, time\nfrom pathlib import Path\n"
              "from privrec.experiments.parallel import Backend, train_all\n"
              "from privrec.experiments.runner import RunSpec\n"
              "class Sleeper:\n"
              "    def train(self, spec, state, log):\n"
              f"        Path({str(pidfile)!r}).write_text(str(os.getpid()))\n"
              "        time.sleep(120)\n"
              "if __name__ == '__main__':\n"
              f"    train_all(Sleeper(), [RunSpec('s', 0, {{}})], {{'s': Path({str(state)!r})}}, Backend(jobs=2),\n"
              "              lambda r: None, lambda left: '', print)\n")
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not (pidfile.is_file() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        worker = int(pidfile.read_text())
        assert _alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 60
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker)
    finally:
        parent.kill()


def test_remaining_cost_prices_each_missing_run_at_its_methods_mean_time():
    from privrec.experiments.provenance import remaining_cost
    from privrec.experiments.report import partial_note

    def rec(method, seconds):
        fit = {"best_epoch": 1, "epochs_run": 1, "seconds": seconds}
        return RunRecord(f"{method}|{seconds}", 0, {"method": method}, fit, {})

    done = [rec("a", 100.0), rec("a", 300.0), rec("b", 1000.0), RunRecord("old", 0, {"model": "b"}, {}, {})]
    missing = [RunSpec("a|x", 1, {"method": "a"}), RunSpec("b|x", 1, {"method": "b"}),
               RunSpec("c|x", 1, {"method": "c"})]               # c: no finished run, priced at the mean of all
    cost = remaining_cost(missing, done)
    assert cost == {"runs": 3, "seconds": 200.0 + 1000.0 + 1400.0 / 3, "unpriced": 1}
    assert remaining_cost([], done) == {}
    assert remaining_cost(missing, [done[-1]]) == {"runs": 3, "seconds": None, "unpriced": 3}
    line = partial_note(4, {"missing": [s.key for s in missing], "remaining": cost})[0]
    assert line.startswith("**Partial report: 4 of 7 runs finished**; not yet run: `a|x`, `b|x`, `c|x`.")
    assert "about **0.5 CPU-hours**" in line and "1 of a method with no finished run yet" in line
    assert partial_note(4, {"missing": []}) == []
    gpu = rec("a", 5.0)                                          # a GPU run does not price a CPU-hour estimate
    gpu.environment = {"accelerator": "NVIDIA H200"}
    assert remaining_cost(missing[:1], [*done, gpu])["seconds"] == 200.0
    assert remaining_cost(missing[:1], [gpu])["seconds"] == 5.0   # ... unless nothing ran on a CPU
    long = [rec("a", 100.0), rec("a", 300.0)]
    for r, n in zip(long, (10, 30)):
        r.fit["epochs_run"] = n                                   # mean 20 epochs; a cap of 5 is a quarter of that
    assert remaining_cost(missing[:1], long, {"a|x": (5, 1, 1)})["seconds"] == 50.0
    assert remaining_cost(missing[:1], long, {"a|x": (50, 1, 1)})["seconds"] == 200.0
    for r in long:
        r.fit["epochs_run"] = 0                                   # a multi-part run's top-level count can be 0
    assert remaining_cost(missing[:1], long, {"a|x": (5, 1, 1)})["seconds"] == 200.0
    swept = rec("a", 900.0)                                       # a finished run under the same cap prices it
    swept.fit["epochs_run"] = 5
    caps = {"a|x": (5, 1, 1), "a|900.0": (5, 1, 1), "a|100.0": (50, 1, 1)}
    assert remaining_cost(missing[:1], [*long, swept], caps)["seconds"] == 900.0


def test_the_trailer_splits_the_training_time_by_a_label():
    from privrec.experiments.report import trailer, training_by

    runs = [{"labels": {"budget": "sweep"}, "fit": {"seconds": 1800.0}}, {"labels": {}, "fit": {"seconds": 3600.0}},
            {"labels": {"budget": "sweep"}, "fit": {"seconds": 900.0}}, {"labels": {}, "fit": {}}]
    split = training_by(runs, "budget", {None: "Table 1", "sweep": "sweeps"})
    assert split == {"sweeps": {"runs": 2, "seconds": 2700.0}, "Table 1": {"runs": 2, "seconds": 3600.0}}
    res = {"training_seconds": 6300.0, "seconds": 3.0, "training_by": split}
    assert trailer(res) == ["Training time summed over the runs: 1.75 h (sweeps: 0.75 h over 2 runs; "
                            "Table 1: 1.00 h over 2 runs; this invocation: 3 s)."]
    res["training_by"] = training_by(runs[1:2], "budget")          # one group: no split shown
    assert trailer(res) == ["Training time summed over the runs: 1.75 h (this invocation: 3 s)."]


def test_a_report_only_call_estimates_what_the_missing_runs_cost(tmp_path):
    out = tmp_path / "out"
    toy = Toy({"a": 1, "b": 1})
    toy.runs = lambda: [RunSpec("a|0", 0, {"model": "a"})]
    execute(toy, out, log=lambda m: None)
    full = Toy({"a": 1, "b": 1})
    outcome = execute(full, out, train_missing=False, log=lambda m: None)
    assert full.trained == [] and sorted(outcome.missing) == ["a|1", "b|0", "b|1"]
    assert outcome.remaining["runs"] == 3 and outcome.remaining["unpriced"] == 3   # Toy records carry no time


def test_a_fixed_budget_counts_only_runs_that_trained_it_whole_and_marks_late_bests():
    from privrec.experiments.caps import may_still_improve, reusable, stopped_early

    late, early = ({"best_epoch": b, "epochs_run": 100, "stopped_early": False} for b in (95, 60))
    stopped = {"best_epoch": 35, "epochs_run": 45, "stopped_early": True}
    assert reusable(late, (100, None, 1)) and reusable(early, (100, None, 1))
    assert not reusable(late, (150, None, 1))                   # a higher budget continues it
    assert may_still_improve(late, None) and not may_still_improve(early, None)
    assert not stopped_early({"best_epoch": 35, "epochs_run": 45}, None)     # no patience: never judged stopped
    assert may_still_improve(early, 10) and not may_still_improve(stopped, 10)   # with patience: the cap ended it


def test_a_report_on_a_fresh_clone_keeps_the_certificates_of_releases_it_did_not_rebuild(tmp_path):
    """Release folders are not committed: a report rewritten where only some releases exist keeps the
    previous report's certificates of the others (marked), and a folder present here wins."""
    import json

    from privrec.experiments.report import ABSENT_RELEASE, absent_note, certificates, release_name

    def cert(eps):
        return {"summary": f"epsilon={eps}\nmore", "input": {"users": 3}, "guarantee": {"epsilon": eps}}

    published, report = tmp_path / "grid.published", tmp_path / "grid"
    (published / "a").mkdir(parents=True)
    (published / "a" / "certificate.json").write_text(json.dumps({**cert(1.0), "extra": "dropped"}))
    assert certificates(published) == {"a": cert(1.0)}                      # no earlier report: the folders
    report.mkdir()
    (report / "results.json").write_text(json.dumps({"certificates": {"a": cert(9.0), "b": cert(2.0), "bad": {}}}))
    got = certificates(published)
    assert got == {"a": cert(1.0), "b": {**cert(2.0), "folder": ABSENT_RELEASE}}  # here wins; malformed skipped
    assert [release_name(n, c) for n, c in got.items()] == ["a", "b‡"]
    assert absent_note(got)[0].startswith("‡ 1 release folder(s) not on the machine")
    assert absent_note({"a": cert(1.0)}) == []
    (report / "results.json").write_text("{not json")                         # unreadable: not trusted
    assert certificates(published) == {"a": cert(1.0)}
    assert certificates(tmp_path / "elsewhere") == {}                       # not an OUT.published folder


def test_remaining_cost_scales_by_each_runs_relative_work():
    """A run declared twice as much work (DIPSGNN: more propagation steps) is priced twice as high, and a
    finished heavy run prices a light one at its per-unit time."""
    from privrec.experiments.dipsgnn import DIPSGNNExperiment
    from privrec.experiments.provenance import remaining_cost

    def work(labels):
        return float(labels.get("steps") or 1)

    done = [RunRecord("a|1", 0, {"method": "a", "steps": 1}, {"epochs_run": 1, "seconds": 100.0}, {}),
            RunRecord("a|3", 0, {"method": "a", "steps": 3}, {"epochs_run": 1, "seconds": 900.0}, {})]
    missing = [RunSpec("a|2", 0, {"method": "a", "steps": 2})]
    assert remaining_cost(missing, done, work=work)["seconds"] == 2 * (100.0 + 300.0) / 2
    assert remaining_cost(missing, done)["seconds"] == 500.0          # without it: the plain mean
    assert DIPSGNNExperiment.work_of({"steps": 1}) == 1.0
    assert DIPSGNNExperiment.work_of({"steps": 5}) == 4.0
    assert DIPSGNNExperiment.work_of({"steps": None}) == 1.0


class Timed(Toy):
    def train(self, spec, state, log):
        rec = super().train(spec, state, log)
        rec.fit["seconds"] = 600.0 if spec.labels["model"] == "a" else 60.0
        return rec


def test_each_run_says_which_of_how_many_and_what_is_left():
    """Before each run: 'run k of N: KEY', and once a run of each method finished, the time the rest should take
    (priced as remaining_cost prices them)."""
    import tempfile

    lines: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        execute(Timed({"a": 1, "b": 1}), Path(d) / "out", log=lines.append)
    steps = [x for x in lines if x.startswith("run ")]
    assert [x.split(":")[0] for x in steps] == ["run 1 of 4", "run 2 of 4", "run 3 of 4", "run 4 of 4"]
    assert "no finished run to price them yet" in steps[0]
    assert steps[1].startswith("run 2 of 4: a|1; about 30 min left (3 runs")     # a|1, b|0, b|1 at a's 10 min
    assert steps[3].endswith("about 1 min left (1 runs, priced from the finished ones)")   # b's own 1 min
