"""Nothing a user wrote is ever deleted: privrec replaces only what it can prove it wrote, one lock per
output, and two trains of one output keep each other's seeds (issue 76, items 1 and 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import sdp_certificate

from privrec.cli import main
from privrec.errors import ParameterError, ReleaseError
from privrec.experiments.report import save_report
from privrec.release import read_release, write_release
from privrec.utils.io import atomic_dir, clean_stale, writer_tag
from privrec.utils.outputs import check_progress_file, check_replaceable, output_lock, ownership, seal

TRAIN = ["train", "gru4rec", "--protocol", "raw", "--max-len", "6", "--epochs", "1", "--batch-size", "16",
         "--set", "hidden=8", "--set", "embedding=8", "--quiet"]


def _release(folder: Path, text: str = "x\n"):
    return write_release(folder, lambda tmp: (tmp / "data.csv").write_text(text), sdp_certificate())


def _report(folder: Path, kind: str = "train", extra: dict | None = None) -> None:
    save_report(folder, {"kind": "sequential", "runs": []}, "# report\n", kind=kind,
                plots={name: (lambda p, b=body: p.write_text(b)) for name, body in (extra or {}).items()})


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_marked_folder_lists_every_file_with_its_digest(tmp_path):
    _report(tmp_path / "r", extra={"plot.png": "png"})
    marker = json.loads((tmp_path / "r" / ".privrec").read_text())
    assert marker["kind"] == "train" and sorted(marker["files"]) == ["plot.png", "results.json", "results.md"]
    assert ownership(tmp_path / "r").foreign == [] and ownership(tmp_path / "r").changed == []
    _report(tmp_path / "r")                                  # the same kind replaces it: privrec wrote all of it
    assert not (tmp_path / "r" / "plot.png").exists()


@pytest.mark.parametrize("intruder", ["notes.txt", "sub/thesis.tex"])
def test_a_file_privrec_did_not_write_blocks_the_replace_and_is_named(tmp_path, intruder):
    _report(tmp_path / "r")
    (tmp_path / "r" / intruder).parent.mkdir(exist_ok=True)
    (tmp_path / "r" / intruder).write_text("mine")
    before = _tree(tmp_path / "r")
    with pytest.raises(ParameterError, match=f"files privrec did not write: {intruder}"):
        _report(tmp_path / "r")
    with pytest.raises(ParameterError, match="a release never replaces"):
        _release(tmp_path / "r")
    assert _tree(tmp_path / "r") == before


def test_an_edited_report_file_blocks_the_replace(tmp_path):
    _report(tmp_path / "r")
    (tmp_path / "r" / "results.md").write_text("# my annotated copy\n")
    with pytest.raises(ParameterError, match="changed since privrec wrote them: results.md"):
        _report(tmp_path / "r")
    assert (tmp_path / "r" / "results.md").read_text() == "# my annotated copy\n"


def test_one_kind_of_output_never_replaces_another(tmp_path):
    _report(tmp_path / "train", kind="train")
    _release(tmp_path / "rel")
    with pytest.raises(ParameterError, match="holds a train written by privrec .a release never replaces"):
        _release(tmp_path / "train")
    with pytest.raises(ParameterError, match="holds a release written by privrec .a train never replaces"):
        check_replaceable(tmp_path / "rel", "train")
    with pytest.raises(ParameterError, match="holds a train written by privrec .a reproduce pricdsr never"):
        _report(tmp_path / "train", kind="reproduce pricdsr")
    with pytest.raises(ParameterError, match="a merge never replaces"):
        _report(tmp_path / "train", kind="merge")
    assert read_release(tmp_path / "rel") and (tmp_path / "train" / "results.md").is_file()
    _release(tmp_path / "rel", "y\n")                    # a release replaces a release
    assert read_release(tmp_path / "rel").path("data.csv").read_text() == "y\n"


def test_a_copied_results_json_does_not_make_a_folder_privrecs(tmp_path):
    """A user folder holding thesis.tex plus a copy of a privrec results.json (no marker)."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    (mine / "results.json").write_text(json.dumps({"kind": "sequential", "environment": {"privrec": "0.1"},
                                                   "command": "privrec train sasrec"}))
    with pytest.raises(ParameterError, match="files privrec did not write: thesis.tex"):
        _report(mine)
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_reports_written_before_the_marker_are_still_replaceable(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "results.json").write_text(json.dumps({"kind": "pricdsr", "environment": {"privrec": "0.1"},
                                                  "command": "privrec reproduce pricdsr --quick"}))
    (old / "results.md").write_text("# r\n")
    (old / ".privrec").write_text("written by privrec; replaced as a whole by the next run with this output\n")
    (old / "privacy_utility.png").write_text("png")
    assert ownership(old).kind == "reproduce pricdsr"
    with pytest.raises(ParameterError, match="a train never replaces"):
        check_replaceable(old, "train")
    _report(old, kind="reproduce pricdsr")
    assert json.loads((old / ".privrec").read_text())["kind"] == "reproduce pricdsr"


def test_only_this_targets_dead_writers_leftovers_are_cleaned(tmp_path):
    _release(tmp_path / "rel")
    users_old = tmp_path / ".rel.old"
    users_old.mkdir()
    (users_old / "thesis.tex").write_text("mine")
    (tmp_path / ".rel.mine.tmp").write_text("mine too")
    live = tmp_path / f".rel.b.{writer_tag()}.abc123.tmp"            # a live publish to rel.b
    live.mkdir()
    host = writer_tag().split("-")[0]
    dead_tmp = tmp_path / f".rel.{host}-999999999.x1.tmp"            # a killed writer of rel (no such pid)
    dead_tmp.mkdir()
    other_host = tmp_path / ".rel.00000000-1.x2.tmp"                # another host's: may still be writing
    other_host.mkdir()
    _release(tmp_path / "rel", "new\n")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert ".rel.old" in names and ".rel.mine.tmp" in names and live.name in names and other_host.name in names
    assert dead_tmp.name not in names and (users_old / "thesis.tex").read_text() == "mine"


def test_a_dead_writers_backup_is_restored_when_its_target_is_missing(tmp_path):
    _release(tmp_path / "rel")
    host = writer_tag().split("-")[0]
    (tmp_path / "rel").rename(tmp_path / f".rel.{host}-999999999.old")
    clean_stale(tmp_path / "rel")
    assert read_release(tmp_path / "rel").path("data.csv").read_text() == "x\n"


def test_a_second_process_is_refused_while_one_writes(tmp_path):
    target = tmp_path / "out"
    code = ("import sys, time\nfrom privrec.utils.outputs import output_lock\n"
            f"with output_lock({str(target)!r}):\n    print('held', flush=True)\n    time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ReleaseError, match=f"another privrec process is writing {target}"):
            _release(target)
        with pytest.raises(ReleaseError, match="another privrec process is writing"), output_lock(target):
            pass
    finally:
        proc.kill()
        proc.wait()
    _release(target)                                              # free again once it is gone
    with output_lock(target), output_lock(target):                # re-entrant within one process
        pass


@pytest.mark.parametrize("name", ["", ".", ".."])
def test_an_output_naming_no_folder_is_refused_first(tmp_path, name, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["publish", "sdp", "x.csv", "-o", name, "--epsilon", "1"]) == 2
    assert "names no output folder" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*lock"))


def test_progress_files_must_be_privrecs(tmp_path):
    mine = tmp_path / "o.progress.jsonl"
    mine.write_text("my own log\n")
    with pytest.raises(ParameterError, match="not a progress file privrec wrote"):
        check_progress_file(mine)
    mine.write_text('{"note": "mine"}\n')
    with pytest.raises(ParameterError, match="not a progress file privrec wrote"):
        check_progress_file(mine)
    mine.write_text('{"config": {}, "run": {"seed": 0}}\n{"cut by a cr')
    check_progress_file(mine)                                     # privrec's record, then a line cut by a crash


def test_train_refuses_a_user_progress_file_before_training(tiny_inter_file, tmp_path, capsys):
    (tmp_path / "o.progress.jsonl").write_text("my own log\n")
    assert main([*TRAIN, "--dataset", str(tiny_inter_file), "--out", str(tmp_path / "o")]) == 2
    assert "not a progress file privrec wrote" in capsys.readouterr().err
    assert (tmp_path / "o.progress.jsonl").read_text() == "my own log\n" and not (tmp_path / "o").exists()


def test_train_over_a_release_or_publish_over_a_train_report_is_refused(tiny_inter_file, tmp_path, capsys):
    _release(tmp_path / "rel")
    assert main([*TRAIN, "--dataset", str(tiny_inter_file), "--out", str(tmp_path / "rel")]) == 2
    assert "holds a release written by privrec (a train never replaces" in capsys.readouterr().err
    assert read_release(tmp_path / "rel")
    assert main([*TRAIN, "--dataset", str(tiny_inter_file), "--out", str(tmp_path / "runs")]) == 0
    (tmp_path / "runs" / "notes.txt").write_text("mine")
    before = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert main(["publish", "sdp", str(tiny_inter_file), "-o", str(tmp_path / "runs"), "--epsilon", "5"]) == 2
    assert "privrec did not write: notes.txt" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == before


def test_two_trains_of_one_output_keep_both_seeds(tiny_inter_file, tmp_path):
    """Side by side (two processes, seeds 0 and 1, one --out): one report of both seeds, both checkpoints."""
    out = tmp_path / "o"
    procs = [subprocess.Popen([sys.executable, "-m", "privrec", *TRAIN, "--dataset", str(tiny_inter_file),
                               "--seeds", str(seed), "--out", str(out)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
             for seed in (0, 1)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    result = json.loads((out / "results.json").read_text())
    assert [r["seed"] for r in result["runs"]] == [0, 1] and result["config"]["seeds"] == [0, 1]
    assert (out / "gru4rec-seed0.pt").is_file() and (out / "gru4rec-seed1.pt").is_file()
    assert not (tmp_path / "o.progress.jsonl").exists() and ownership(out).foreign == []
    # one after the other too, and a rerun of a seed replaces that seed only
    assert main([*TRAIN, "--dataset", str(tiny_inter_file), "--seeds", "1", "--out", str(out)]) == 0
    assert [r["seed"] for r in json.loads((out / "results.json").read_text())["runs"]] == [0, 1]
    # another configuration replaces the report whole (privrec wrote all of it)
    assert main([*TRAIN, "--dataset", str(tiny_inter_file), "--seeds", "2", "--max-len", "5", "--out", str(out)]) == 0
    assert [r["seed"] for r in json.loads((out / "results.json").read_text())["runs"]] == [2]


def test_results_merge_never_writes_over_its_inputs_or_user_files(tiny_inter_file, tmp_path, capsys):
    assert main([*TRAIN, "--dataset", str(tiny_inter_file), "--out", str(tmp_path / "runs")]) == 0
    report = tmp_path / "runs" / "results.json"
    before = report.read_text()
    assert main(["results", "merge", str(report), "--out", str(tmp_path / "runs")]) == 2
    assert "contains the input" in capsys.readouterr().err and report.read_text() == before
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "results.md").write_text("my notes")
    assert main(["results", "merge", str(report), "--out", str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine" / "results.md").read_text() == "my notes"
    capsys.readouterr()
    for bad, body in (("list.json", b"[1, 2]"), ("bin.json", b"\xff\xfe\x00"), ("noruns.json", b'{"kind": "sequential"}')):
        (tmp_path / bad).write_bytes(body)
        assert main(["results", "merge", str(tmp_path / bad), "--out", str(tmp_path / "m")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "internal error" not in err and err.count("\n") == 1
    assert not (tmp_path / "m").exists()


def test_atomic_dir_and_seal_compose(tmp_path):
    with atomic_dir(tmp_path / "d") as tmp:
        (tmp / "a.txt").write_text("a")
        seal(tmp, "train")
    assert ownership(tmp_path / "d").kind == "train"


def test_reproduce_refuses_a_user_folder_before_building_anything(tmp_path):
    import types

    from privrec.experiments import runner

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")

    def make(cfg, published):
        raise AssertionError("nothing may be built or trained for a refused output")

    report = types.SimpleNamespace(__name__="privrec.experiments.pricdsr_report")
    with pytest.raises(ParameterError, match="files privrec did not write .thesis.tex"):
        runner.reproduce_grid(None, make, report, mine, log=print, describe=str, started=0.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    assert (mine / "thesis.tex").read_text() == "years of work"
    _report(tmp_path / "t", kind="train")                  # and never over another kind of output
    with pytest.raises(ParameterError, match="a reproduce pricdsr never replaces"):
        runner.reproduce_grid(None, make, report, tmp_path / "t", log=print, describe=str, started=0.0)


@pytest.mark.slow
def test_a_killed_train_leaves_nothing_the_next_one_cannot_clean(tiny_inter_file, tmp_path):
    """SIGKILL a train at random moments; the next train of the same output finishes, keeps the earlier
    seed, and leaves no temporary, backup or lock of the dead writer."""
    import signal
    import time

    rng = np.random.default_rng(0)
    out = tmp_path / "o"
    args = [sys.executable, "-m", "privrec", *TRAIN, "--dataset", str(tiny_inter_file), "--out", str(out)]
    assert subprocess.run([*args, "--seeds", "0"], capture_output=True).returncode == 0
    for _ in range(4):
        proc = subprocess.Popen([*args, "--seeds", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(float(rng.uniform(3.0, 9.0)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert ownership(out).foreign == [] and ownership(out).changed == []     # never a half-written report
    assert subprocess.run([*args, "--seeds", "1"], capture_output=True).returncode == 0
    assert [r["seed"] for r in json.loads((out / "results.json").read_text())["runs"]] == [0, 1]
    left = [p.name for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old"))]
    assert left == [], left


def test_a_second_reproduce_of_one_output_is_told_how_to_read_the_first(tmp_path):
    import types

    from privrec.experiments import runner

    code = ("import time\nfrom privrec.utils.outputs import output_lock\n"
            f"with output_lock({str(tmp_path / 'rep')!r}):\n    print('held', flush=True)\n    time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    report = types.SimpleNamespace(__name__="privrec.experiments.pricdsr_report")
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(ReleaseError, match="--report-only --out OTHER --add-progress .*rep.progress.jsonl"):
            runner.reproduce_grid(None, lambda c, p: None, report, tmp_path / "rep", log=print, describe=str,
                                  started=0.0)
    finally:
        proc.kill()
        proc.wait()
