"""Bad input and faults, as a hostile or careless user tries them: every case must end in a one-line
privrec error that names the problem (exit code != 0, no traceback, no "internal error") and leave
nothing behind. The fast part runs every refusal through the real entry point and prints the count
refused cleanly / total; the slow part (``-m slow``) kills and races real ``privrec publish``
processes and checks that a release is never left under a certificate that is not its own.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrec.cli import main

# (command line, what the one-line error must say)
CASES: list[tuple[str, str]] = [
    # output equal to an input, into the cache, or over a folder of the user's files
    ("publish sdp x.csv -o x.csv --epsilon 1", "a release is a folder"),
    ("publish sdp x.csv -o sub/../x.csv --epsilon 1", "a release is a folder"),
    ("publish sdp x.inter -o x.inter --epsilon 1", "a release is a folder"),
    ("publish sdp x.csv -o . --epsilon 1", "names no output folder"),
    ("publish sdp x.csv -o {cache}/mine --epsilon 1", "dataset cache"),
    ("publish sdp x.csv -o guard --epsilon 1", "never deletes"),
    ("train sasrec --dataset x.inter --protocol raw --out guard", "never deletes"),
    ("train sasrec --dataset x.inter --protocol raw --out g2", "did not write"),
    ("train sasrec --dataset x.inter --protocol raw --out {cache}/runs", "dataset cache"),
    ("train sasrec --dataset x.inter --protocol raw --out .", "names no output folder"),
    # numerical edges and parameters outside their domain
    ("publish jlt x.csv -o r --epsilon 1e-300", "numerically unreliable"),
    ("publish sjlt x.csv -o r --epsilon 1 --delta 1e-300", "numerically unreliable"),
    ("guarantee jlt --epsilon 1e-300", "less extreme epsilon"),
    ("publish sdp x.csv -o r --epsilon 0", "epsilon must be a positive finite number"),
    ("publish sdp x.csv -o r --epsilon nan", "epsilon must be a positive finite number"),
    ("publish sdp x.csv -o r --epsilon -3", "epsilon must be a positive finite number"),
    ("publish jlt x.csv -o r --epsilon 1 --delta 1.5", "delta must lie strictly between 0 and 1"),
    ("publish jlt x.csv -o r --epsilon 1 --delta 0", "delta must lie strictly between 0 and 1"),
    ("publish sdp x.csv -o r --epsilon 1 --delta 1e-5", "--delta is not a parameter of sdp"),
    ("guarantee sdp --max-len -1", "--max-len"),
    ("train sasrec --dataset x.inter --protocol raw --max-len 0", "--max-len"),
    ("train sasrec --dataset x.inter --protocol raw --set hidden=0", "hidden must be a positive integer"),
    ("train sasrec --dataset x.inter --protocol raw --set hidden=abc", "hidden must be a positive integer"),
    ("train sasrec --dataset x.inter --protocol raw --set dropout=2", "dropout is a drop probability"),
    ("train sasrec --dataset x.inter --protocol raw --set bogus=1", "has no hyperparameter 'bogus'"),
    ("train sasrec --dataset x.inter --protocol raw --seeds 0,0", "lists a seed twice"),
    ("train sasrec --dataset x.inter --protocol raw --device cuda", "no CUDA GPU"),
    ("evaluate model.pt --seed -1", "--seed"),
    ("audit sdp --seed -1", "--seed"),
    # files: missing, empty, binary, malformed, wrong columns, wrong shapes, unknown ids, tampered
    ("publish sdp missing.csv -o r --epsilon 1", "neither a known dataset"),
    ("publish sdp empty.csv -o r --epsilon 1", "empty"),
    ("publish sdp bin.inter -o r --epsilon 1", "not UTF-8 text"),
    ("train sasrec --dataset noon.inter --protocol raw", "non-numeric value 'noon'"),
    ("publish sdp who.csv -o r --epsilon 1", "rename the column holding the user ids to 'user_id'"),
    ("publish sdp nan.csv -o r --epsilon 1", "rating"),
    ("publish rr x.csv -o r --epsilon 1 --embeddings emb.npy", "expected (40, d)"),
    ("recommend model.pt --user nobody", "nobody"),
    ("evaluate nothing.pt", "no such checkpoint"),
    ("evaluate nohash.pt", "no content hash"),
    ("evaluate tampered.pt", "SHA-256 mismatch"),
    # file-system failures name the path the user gave, not a hidden helper file
    ("publish sdp x.csv -o /proc/privrec-release --epsilon 1", "/proc/privrec-release"),
    ("publish sdp x.csv -o x.csv/sub --epsilon 1", "in the way of x.csv"),
    # DIPSGNN (issue 14): every parameter named, a dataset without user features refused
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --epsilon1 0", "epsilon must be a positive"),
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --epsilon2 -1", "epsilon2 must be a positive"),
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --epsilon2 inf", "epsilon2 must be a positive"),
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --delta 2", "delta must lie strictly between"),
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --clip-norm 0", "clip must be positive"),
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --steps 0", "--steps"),
    ("train dipsgnn --dataset bare.inter --protocol dipsgnn --epochs 1", "has none"),
    ("train edgerand --dataset feat.inter --protocol dipsgnn --epochs 1", "give --epsilon2"),
    ("train edgerand --dataset feat.inter --protocol dipsgnn --epsilon2 5 --epsilon1 20 --no-user-features",
     "give one"),
    ("train dpsgd-srgnn --dataset feat.inter --protocol dipsgnn", "needs its budget"),
    ("train dipsgnn --dataset feat.inter --protocol dipsgnn --dpsgd-unit user", "give its budget with --dpsgd-epsilon"),
    ("train dipsgnn --dataset feat.inter --dpsgd-epsilon 2 --dpsgd-unit user", "use --protocol dipsgnn"),
    ("train dpsgd-srgnn --dataset feat.inter --protocol dipsgnn --epsilon2 5 --precision bf16", "not supported with"),
    ("train sasrec --dataset x.inter --protocol raw --precision fp16", "'fp16' is not one of"),
    ("train sasrec --dataset feat.inter --protocol dipsgnn --epsilon2 5", "not sasrec's"),
    ("reproduce dipsgnn --quick --methods LightGCN --out rep", "unknown methods"),
    ("reproduce pfcr --quick --epsilon 0 --out rep", "epsilon"),
    ("reproduce pfcr --quick --buckets 48 --out rep", "power of two"),
    ("reproduce pfcr --quick --rounds 0 --out rep", "rounds"),
    ("reproduce pfcr --quick --local-epochs 0 --out rep", "local_epochs"),
    ("reproduce pfcr --quick --strategies scaffold,bogus --out rep", "strategies"),
    ("reproduce pfcr --quick --baselines LightGCN --out rep", "unknown baselines"),
]


def _inter(frame: pd.DataFrame, path: Path) -> None:
    out = frame[["user_id", "item_id", "rating", "timestamp"]].copy()
    out.columns = ["user_id:token", "item_id:token", "rating:float", "timestamp:float"]
    out.to_csv(path, sep="\t", index=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Small real-format files of every kind a user may hand privrec, and a trained checkpoint."""
    monkeypatch.chdir(tmp_path)
    rows = [(f"u{u}", f"i{(u + t) % 40}", 5.0, float(100 * u + t)) for u in range(1, 31) for t in range(14)]
    frame = pd.DataFrame(rows, columns=["user_id", "item_id", "rating", "timestamp"])
    frame.to_csv("x.csv", index=False)
    _inter(frame, Path("x.inter"))
    frame.rename(columns={"user_id": "who"}).to_csv("who.csv", index=False)
    bad = frame.copy()
    bad.loc[3, "rating"] = np.nan
    bad.to_csv("nan.csv", index=False)
    Path("bin.inter").write_bytes(bytes(range(256)) * 4)
    Path("empty.csv").write_text("")
    Path("noon.inter").write_text("user_id:token\titem_id:token\ttimestamp:float\nu1\ti1\tnoon\n")
    Path("guard").mkdir()
    Path("guard/thesis.tex").write_text("my thesis")
    Path("g2.state").mkdir()
    Path("g2.state/notes.txt").write_text("my notes")
    np.save("emb.npy", np.zeros((5, 4)))
    # a 10-core log with ratings >= 4 (the DIPSGNN protocol), with and without a .user table
    big = pd.DataFrame([(f"u{u}", f"i{(u + t) % 30}", 5.0, float(100 * u + t)) for u in range(1, 41) for t in range(14)],
                       columns=["user_id", "item_id", "rating", "timestamp"])
    _inter(big, Path("feat.inter"))
    _inter(big, Path("bare.inter"))
    users = sorted(big.user_id.unique())
    rng = np.random.default_rng(0)
    pd.DataFrame({"user_id:token": users, "age:float": rng.choice([1, 18, 25], len(users)).astype(float),
                  "gender:token": rng.choice(["F", "M"], len(users)),
                  "occupation:float": rng.integers(0, 21, len(users)).astype(float)}).to_csv(
        "feat.user", sep="\t", index=False)
    assert main(["train", "sasrec", "--dataset", "x.inter", "--protocol", "raw", "--epochs", "1", "--out", "runs",
                 "--set", "hidden=8", "--quiet"]) == 0
    import shutil

    import torch

    shutil.copy("runs/sasrec-seed0.pt", "model.pt")
    payload = torch.load("model.pt", weights_only=True)
    payload.pop("content_sha256")
    torch.save(payload, "nohash.pt")
    payload = torch.load("model.pt", weights_only=True)
    name = next(iter(payload["state_dict"]))
    payload["state_dict"][name] = payload["state_dict"][name] + 1
    torch.save(payload, "tampered.pt")
    return tmp_path


def test_every_bad_input_is_a_clean_one_line_refusal(workdir, capsys):
    from privrec.data.fetch import cache_dir

    clean, failures = 0, []
    before = {p for p in workdir.rglob("*")}
    for line, needle in CASES:
        argv = shlex.split(line.format(cache=cache_dir() / "datasets"))
        code = main(argv)
        out = capsys.readouterr()
        err = out.err.strip()
        last = err.splitlines()[-1] if err else ""     # click's usage errors print the usage above it
        ok = (code != 0 and needle in last and last.lower().startswith("error:") and "Traceback" not in err
              and "internal error" not in err)
        clean += ok
        if not ok:
            failures.append(f"privrec {line} -> exit {code}: {err[-300:]}")
    print(f"\nrefused cleanly: {clean} / {len(CASES)}")
    assert not failures, "\n".join(failures)
    left = {p for p in workdir.rglob("*")} - before
    assert not left, f"refused commands left files behind: {sorted(map(str, left))}"
    assert Path("guard/thesis.tex").read_text() == "my thesis" and Path("g2.state/notes.txt").read_text() == "my notes"


def test_a_relative_dataset_is_stored_absolute_so_evaluate_works_from_anywhere(workdir, capsys, monkeypatch):
    import torch

    cfg = torch.load("model.pt", weights_only=True)["meta"]["config"]
    assert Path(cfg["dataset"]).is_absolute()
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["evaluate", str(workdir / "model.pt")]) == 0


# ------------------------------------------------------------------------------ faults (real processes)
def _publish(folder: str, epsilon: float, seed: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "privrec", "publish", "sdp", "x.csv", "-o", folder, "--epsilon",
                             str(epsilon), "--seed", str(seed), "--record-seed"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH":
                                                                                     str(Path(__file__).parents[1])})


def _verified(folder: str) -> dict | None:
    """The certificate of ``folder`` if its files hash to what the certificate lists (None: no release)."""
    from privrec.release.folder import is_release, read_release

    if not Path(folder).exists():
        return None
    assert is_release(Path(folder)), f"{folder} exists but is not a complete release"
    return read_release(Path(folder)).certificate       # raises if any file differs from its listed SHA-256


@pytest.mark.slow
def test_killed_and_concurrent_publishes_never_leave_a_release_under_another_certificate(workdir):
    rng = np.random.default_rng(0)
    for trial in range(8):                               # SIGKILL at random moments of a publish
        eps = float(rng.choice([1.0, 2.0, 50.0]))
        proc = _publish("rel", eps, trial)
        time.sleep(float(rng.uniform(0.2, 4.0)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cert = _verified("rel")
        if cert is not None:
            assert cert["guarantee"]["parameters"]["epsilon"] in (1.0, 2.0, 50.0)
    assert _publish("rel", 1.0, 9).wait() == 0                  # the next write removes the killed writers' temporaries
    assert not [p for p in workdir.iterdir() if p.name.startswith(".rel.") and p.name.endswith((".tmp", ".old"))]
    for wait in (1.0, 2.5, 4.0):                         # SIGTERM is handled like Ctrl-C: temporaries removed
        proc = _publish("term", 1.0, 7)                  # (before the handler is set, nothing is written yet)
        time.sleep(wait)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait() in (0, 130, -signal.SIGTERM)
        assert not [p for p in workdir.iterdir() if p.name.startswith(".term.") and ".tmp" in p.name]
        _verified("term")            # none, or a whole one (the signal can land after the swap, before exit)
    for trial in range(3):                               # two publishes to one folder at once
        a, b = _publish("race", 1.0, 100 + trial), _publish("race", 50.0, 200 + trial)
        codes = a.wait(), b.wait()
        cert = _verified("race")
        assert cert is not None and 0 in codes
        seed = cert["randomness"]["seed"]
        assert (cert["guarantee"]["parameters"]["epsilon"], seed) in ((1.0, 100 + trial), (50.0, 200 + trial))
