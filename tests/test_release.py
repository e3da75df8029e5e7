"""Releases cannot lie: data and certificate are one folder, written once, verified on every read."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import sdp_certificate

from privrec.cli import main
from privrec.errors import ParameterError, ReleaseError
from privrec.release import read_release, write_release
from privrec.release.folder import exclusive
from privrec.release.paths import check_output


def _writer(text: str):
    def write(tmp):
        (tmp / "data.csv").write_text(text)
    return write


def test_release_is_one_folder_with_hashes_and_refuses_tampering(tmp_path):
    rel = write_release(tmp_path / "r", _writer("a,b\n1,2\n"), sdp_certificate(input={"x": 1}))
    files = rel.certificate["output"]["files"]
    assert set(files) == {"data.csv"} and files["data.csv"]["bytes"] == 8
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["certificate.json", "data.csv"]
    assert read_release(tmp_path / "r").certificate["input"] == {"x": 1}
    (tmp_path / "r" / "data.csv").write_text("a,b\n1,3\n")                 # same size, other content
    with pytest.raises(ReleaseError, match="does not match its certificate"):
        read_release(tmp_path / "r")
    (tmp_path / "r" / "data.csv").unlink()
    with pytest.raises(ReleaseError, match="missing"):
        read_release(tmp_path / "r")
    (tmp_path / "r" / "certificate.json").write_text("{}")
    with pytest.raises(ReleaseError, match="not a privrec-release/2 certificate"):
        read_release(tmp_path / "r")
    with pytest.raises(ReleaseError, match="no release"):
        read_release(tmp_path / "absent")


def test_a_failed_publish_leaves_the_previous_release_and_no_temporary_files(tmp_path):
    write_release(tmp_path / "r", _writer("old\n"), sdp_certificate())

    def broken(tmp):
        (tmp / "data.csv").write_text("new, half written")
        raise RuntimeError("killed while writing")
    with pytest.raises(RuntimeError):
        write_release(tmp_path / "r", broken, sdp_certificate())
    assert (tmp_path / "r" / "data.csv").read_text() == "old\n" and read_release(tmp_path / "r")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_kill_between_the_two_renames_of_a_swap_is_repaired_by_the_next_writer(tmp_path):
    import subprocess
    import sys

    write_release(tmp_path / "r", _writer("old\n"), sdp_certificate())
    code = ("import os, signal\nimport privrec.utils.io as io\nfrom privrec.release import write_release\n"
            "real, calls = os.replace, []\n"
            "def dying(src, dst):\n    calls.append(dst)\n"
            "    if str(dst).endswith('/r'):\n        os.kill(os.getpid(), signal.SIGKILL)   # old -> backup done\n"
            "    return real(src, dst)\n"
            "io.os.replace = dying\n"
            f"write_release({str(tmp_path / 'r')!r}, lambda t: (t / 'data.csv').write_text('new'), {{'kind': 'x'}})\n")
    assert subprocess.run([sys.executable, "-c", code]).returncode == -9
    backups = [p.name for p in tmp_path.iterdir() if p.name.endswith(".old")]
    assert not (tmp_path / "r").exists() and len(backups) == 1          # the window: no release at all
    with exclusive(tmp_path / "r"):                                    # the next writer restores it
        pass
    assert read_release(tmp_path / "r").path("data.csv").read_text() == "old\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".old", ".tmp"))]


def test_never_replaces_a_folder_privrec_did_not_write(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(ParameterError, match="privrec never deletes"):
        write_release(tmp_path / "mine", _writer("x\n"), sdp_certificate())
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"
    (tmp_path / "empty").mkdir()
    write_release(tmp_path / "empty", _writer("x\n"), sdp_certificate())   # an empty folder may be used


def test_outputs_that_would_destroy_an_input_or_the_cache_are_refused(tmp_path, monkeypatch):
    src = tmp_path / "data" / "x.csv"
    src.parent.mkdir()
    src.write_text("u,i\n")
    monkeypatch.chdir(tmp_path)
    for out in ("data/x.csv", "./data/x.csv", "data/sub/../x.csv", "data", "."):
        with pytest.raises(ParameterError, match="input"):
            check_output(out, [src])
    check_output("data/out", [src])                                           # beside the input is fine
    from privrec.data.fetch import cache_dir

    with pytest.raises(ParameterError, match="cache"):
        check_output(cache_dir() / "datasets" / "ml-100k" / "y", [src])


@pytest.fixture
def toy(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"user_id": f"u{u}", "item_id": f"i{i}", "rating": float(rng.integers(1, 6)), "timestamp": float(t)}
            for u in range(30) for t, i in enumerate(rng.choice(60, 12, replace=False))]
    path = tmp_path / "toy.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("args,needle", [
    (["sdp", "-o", "{src}"], "a release is a folder"),                   # a file name, the input itself
    (["sdp", "-o", "{dir}"], "contains the input"),                      # the folder holding the input
    (["sdp", "-o", "{dir}/toy.inter"], "a release is a folder"),
    (["sdp", "--epsilon", "1e308"], "infinity"),                         # the true guarantee is infinite
    (["jlt", "--epsilon", "1e-300"], "numerically unreliable|infinite"),  # noise overflows
    (["jlt", "--delta", "0.5"], r"delta = 0.5 is >= 1/n"),              # delta >= 1/#users
    (["sjlt", "--delta", "1e-300"], "numerically unreliable"),
    (["sdp", "--max-len", "0"], "max-len"),
])
def test_publish_refuses_settings_a_certificate_cannot_honour(toy, tmp_path, args, needle, capsys):
    argv = ["publish", args[0], str(toy), *[a.format(src=toy, dir=toy.parent) for a in args[1:]]]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "out")]
    if "--epsilon" not in argv:
        argv += ["--epsilon", "1"]
    # a fixed seed: the SJLT's coherence (and so its noise scale z) depends on the drawn signs, and at
    # delta = 1e-300 some draws stay just clear of the cancellation that the refusal detects
    argv += ["--seed", "0"]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") or err.startswith("Error: ") or "Usage" in err
    import re

    assert re.search(needle, err), err
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == \
        [n for n in before if not n.startswith(".")]
    assert toy.read_text().startswith("user_id")                          # the input is intact


def test_sjlt_tight_calibration_uses_the_sjlt_profile():
    """`privrec guarantee sjlt --calibration tight` used to calibrate w with the JLT profile (and an
    item count of 1): its "tight" w gave a true epsilon of 1.095 for a requested 1.0."""
    from privrec.privacy.registry import guarantee_of

    j = guarantee_of("jlt", 1.0, calibration="tight", delta=1e-5)
    s = guarantee_of("sjlt", 1.0, calibration="tight", delta=1e-5)
    assert j.epsilon == pytest.approx(1.0, abs=1e-6) and s.epsilon == pytest.approx(1.0, abs=1e-6)
    assert s.parameters["w"] > 2 * j.parameters["w"]               # the sparse projection needs more noise
    assert s.parameters["coherence"] == 4.0                        # worst case over D without a draw


def test_publish_jlt_default_delta_and_certificate(toy, tmp_path):
    assert main(["publish", "jlt", str(toy), "-o", str(tmp_path / "j"), "--epsilon", "1", "--n-prime", "4",
                 "--seed", "0"]) == 0
    cert = json.loads((tmp_path / "j" / "certificate.json").read_text())
    assert cert["guarantee"]["delta"] == pytest.approx(1 / 300) and cert["kind"] == "rating-matrix"
