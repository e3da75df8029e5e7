"""Every command of docs/cli.md (the command reference) and of the README's examples runs: exit 0, and writes
what it names.

Each README line is run as a *smaller variant*: the same subcommand and every option the README
shows (values may shrink: one seed, one epoch, ML-100K or a tiny file where the README names a
file of your own), plus options that only make it cheaper. A README line without a variant here
fails :func:`test_every_readme_command_has_a_variant`, so a new example cannot go untested.
Real MovieLens comes from the session cache (fetched once per test session).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
README, CLI_DOC = ROOT / "README.md", ROOT / "docs" / "cli.md"

# README command (comments and [optional] synopsis parts removed) -> the variant that runs, in order.
# Values in the variant may differ; option names of the README line must all appear in it.
VARIANTS: dict[str, str] = {
    "privrec datasets list": "datasets list",
    "privrec datasets fetch ml-1m": "datasets fetch ml-1m",
    "privrec datasets fetch ml-1m --from FILE": "datasets fetch ml-100k --from ml100k-files --force",
    "privrec datasets info ml-1m": "datasets info ml-1m",
    "privrec datasets info shop.csv --user-field customer --item-field product":
        "datasets info shop.csv --user-field user_id --item-field item_id",
    "privrec train gru4rec --dataset shop.csv --user-field customer --item-field product":
        "train gru4rec --dataset shop.csv --user-field user_id --item-field item_id --protocol raw --max-len 6 "
        "--epochs 1 --quiet --out rep/train-fields",
    "privrec datasets testbed cold3": "datasets testbed cold3 --no-probe",
    "privrec train sasrec --dataset ml-1m --seeds 0,1,2": "train sasrec --dataset ml-100k --seeds 0 --epochs 1",
    "privrec train --config run.toml --seeds 0": "train --config run.toml --seeds 0 --out runs/from-config",
    "privrec rerun runs/sasrec-ml-1m/results.json --out runs/again":
        "rerun runs/sasrec-ml-100k/results.json --out runs/again",
    "privrec results merge runs/a/results.json runs/b/results.json --out runs/merged":
        "results merge runs/sasrec-ml-100k/results.json runs/sasrec-ml-100k-s1/results.json --out runs/merged",
    "privrec results merge runs/c.progress.jsonl runs/a/results.json --out runs/merged":
        "results merge runs/s1.progress.jsonl runs/sasrec-ml-100k/results.json --out runs/merged-progress",
    "privrec train gru4rec --dataset my.inter --protocol raw --eval-mode sampled --negatives 100":
        "train gru4rec --dataset my.inter --protocol raw --eval-mode sampled --negatives 100 --epochs 1",
    "privrec train rr-bert4rec --protocol raw --epsilon 0.01":
        "train rr-bert4rec --dataset ml-100k --protocol raw --epsilon 0.01 --epochs 1",
    "privrec train dipsgnn --dataset ml-1m --protocol dipsgnn --epsilon1 20 --set sigma=0.228 --set clip=0.2":
        "train dipsgnn --dataset ml-100k --protocol dipsgnn --epsilon1 20 --set sigma=0.228 --set clip=0.2 --epochs 1 "
        "--set hidden=16 --batch-size 1024",
    "privrec train dipsgnn --dataset ml-100k --protocol dipsgnn --epsilon2 2.5 --accounting honest --dpsgd-epsilon 2.5 "
    "--dpsgd-unit user --batch-size 1024":
        "train dipsgnn --dataset ml-100k --protocol dipsgnn --epsilon2 2.5 --accounting honest --dpsgd-epsilon 2.5 "
        "--dpsgd-unit user --batch-size 1024 --epochs 1 --set hidden=16 --set user_dim=4",
    "privrec train edgerand --dataset ml-1m --protocol dipsgnn --epsilon1 20 --epsilon2 5":
        "train edgerand --dataset ml-100k --protocol dipsgnn --epsilon1 20 --epsilon2 5 --epochs 1 --set hidden=16 "
        "--batch-size 1024",
    "privrec train dpsgd-srgnn --dataset ml-1m --protocol dipsgnn --epsilon2 5":
        "train dpsgd-srgnn --dataset ml-100k --protocol dipsgnn --epsilon2 5 --epochs 1 --set hidden=16 "
        "--batch-size 1024",
    "privrec train srgnn --dataset ml-1m --dpsgd-epsilon 5":
        "train srgnn --dataset ml-100k --dpsgd-epsilon 5 --epochs 1 --batch-size 1024 --set hidden=16",
    "privrec evaluate runs/sasrec-ml-1m/sasrec-seed0.pt --eval-mode sampled":
        "evaluate runs/sasrec-ml-100k/sasrec-seed0.pt --eval-mode sampled",
    "privrec recommend runs/sasrec-ml-1m/sasrec-seed0.pt --user 1m_1 -k 10":
        "recommend runs/sasrec-ml-100k/sasrec-seed0.pt --user 1 -k 10",
    "privrec demo": "SLOW demo",
    "privrec publish sdp ml-1m -o out/ml1m-sdp --epsilon 10 --seed 0":
        "publish sdp ml-100k -o out/ml1m-sdp --epsilon 10 --seed 0",
    "privrec publish sdp ml-1m --aux drama -o out/drama --epsilon 10":
        "publish sdp ml-1m --aux drama -o out/drama --epsilon 10",
    "privrec publish sdp shop.csv --domain-field category --aux books -o out/books --epsilon 10":
        "publish sdp shop.csv --domain-field category --aux books -o out/books --epsilon 10",
    "privrec publish jlt ml-1m -o out/ml1m-jlt --epsilon 1 --n-prime 500":
        "publish jlt ml-100k -o out/ml1m-jlt --epsilon 1 --n-prime 500",
    "privrec publish jlt ml-1m --aux action -o out/action-jlt --epsilon 1 --n-prime 500":
        "publish jlt ml-1m --aux action -o out/action-jlt --epsilon 1 --n-prime 500",
    "privrec train heterocdr --target drama --source out/action-jlt --seeds 0,1,2":
        "SLOW train heterocdr --target drama --source out/action-jlt --seeds 0 --epochs 1 --batch-size 16384",
    "privrec train dmf --target drama --batch-size 4096 --lr 0.001":
        "SLOW train dmf --target drama --batch-size 16384 --lr 0.001 --epochs 1",
    "privrec publish rr ml-1m -o out/ml1m-rr --epsilon 1 --format csv":
        "publish rr ml-100k -o out/ml1m-rr --epsilon 1 --format csv",
    "privrec publish features ml-1m -o out/users --epsilon 4": "publish features ml-1m -o out/users --epsilon 4",
    "privrec guarantee pfcr-paper --epsilon 0.5 --buckets 64": "guarantee pfcr-paper --epsilon 0.5 --buckets 64",
    "privrec guarantee --checkpoint runs/dipsgnn-ml-1m/dipsgnn-seed0.pt":
        "guarantee --checkpoint runs/dipsgnn-ml-100k/dipsgnn-seed0.pt",
    "privrec audit sdp": "audit sdp --samples 2000",
    "privrec reproduce pricdsr": "reproduce pricdsr --quick --data shop.csv --domain-field category --out rep/pricdsr",
    "privrec reproduce pricdsr --report-only":
        "reproduce pricdsr --quick --data shop.csv --domain-field category --out rep/pricdsr --report-only",
    "privrec reproduce pricdsr --quick --data shop.csv --domain-field category":
        "reproduce pricdsr --quick --data shop.csv --domain-field category --out rep/pricdsr-2",
    "privrec reproduce pricdsr --data books.inter --data movies.inter":
        "reproduce pricdsr --quick --data books.inter --data movies.inter --out rep/pricdsr-files",
    "privrec reproduce pricdsr --testbed cold3":
        "reproduce pricdsr --quick --testbed cold3 --data shop.csv --domain-field category --out rep/pricdsr-cold3",
    "privrec reproduce rr": "reproduce rr --quick --no-extras --epochs 1 --epsilons 1 --out rep/rr",
    "privrec reproduce pricdr": "reproduce pricdr --quick --no-sweeps --epochs 1 --methods BPR,PriCDR-J --out rep/pricdr",
    "privrec reproduce pricdr --quick --ray": "reproduce pricdr --quick --no-sweeps --epochs 1 --methods BPR --ray --out "
                                              "rep/pricdr-ray",
    "privrec reproduce dipsgnn":
        "reproduce dipsgnn --quick --no-sweeps --epochs 1 --methods SR-GNN,DIPSGNN --out rep/dipsgnn",
    # four Ray start-ups: slow; its pipeline and both Flower runtimes are tested in test_pfcr_pipeline / test_flower
    "privrec reproduce pfcr": "SLOW reproduce pfcr --quick --epochs 1 --rounds 1 --out rep/pfcr",
    "privrec flower credentials creds --host 127.0.0.1 --nodes 2": "flower credentials creds --host 127.0.0.1 --nodes 2",
}
def _progress_of_seed_1() -> None:
    """The record `privrec train` appends when seed 1 is tested, as left by a run that never reported."""
    import json

    r = json.loads(Path("runs/sasrec-ml-100k-s1/results.json").read_text())
    line = {"config": r["config"], "run": r["runs"][0], "environment": r["environment"]}
    Path("runs/s1.progress.jsonl").write_text(json.dumps(line) + "\n")


TRAIN_SASREC = "privrec train sasrec --dataset ml-1m --seeds 0,1,2"
MERGE = "privrec results merge runs/a/results.json runs/b/results.json --out runs/merged"
NEEDS = {   # README line -> the README lines whose outputs it reads (run first when it runs alone, e.g. with -k)
    "privrec rerun runs/sasrec-ml-1m/results.json --out runs/again": (TRAIN_SASREC,),
    MERGE: (TRAIN_SASREC,),
    "privrec results merge runs/c.progress.jsonl runs/a/results.json --out runs/merged": (MERGE,),
    "privrec evaluate runs/sasrec-ml-1m/sasrec-seed0.pt --eval-mode sampled": (TRAIN_SASREC,),
    "privrec recommend runs/sasrec-ml-1m/sasrec-seed0.pt --user 1m_1 -k 10": (TRAIN_SASREC,),
    "privrec guarantee --checkpoint runs/dipsgnn-ml-1m/dipsgnn-seed0.pt":
        ("privrec train dipsgnn --dataset ml-100k --protocol dipsgnn --epsilon2 2.5 --accounting honest "
         "--dpsgd-epsilon 2.5 --dpsgd-unit user --batch-size 1024",),
    "privrec reproduce pricdsr --report-only": ("privrec reproduce pricdsr",),
    "privrec train heterocdr --target drama --source out/action-jlt --seeds 0,1,2":
        ("privrec publish jlt ml-1m --aux action -o out/action-jlt --epsilon 1 --n-prime 500",),
}

def _config_file() -> None:
    Path("run.toml").write_text('model = "sasrec"\ndataset = "ml-100k"\nepochs = 1\n', encoding="utf-8")


EXTRA_SETUP = {   # run before the variant of the key: a command, or a function (a second seed for `results merge`)
    "privrec train --config run.toml --seeds 0": _config_file,
    "privrec results merge runs/a/results.json runs/b/results.json --out runs/merged":
        "train sasrec --dataset ml-100k --seeds 1 --epochs 1 --out runs/sasrec-ml-100k-s1",
    "privrec results merge runs/c.progress.jsonl runs/a/results.json --out runs/merged": _progress_of_seed_1,
}


def _bash_commands(text: str) -> list[str]:
    out = []
    for line in text.split("```bash", 1)[1].split("```", 1)[0].splitlines():
        line = line.strip()
        if line.startswith("privrec "):
            cmd = re.split(r"\s+#", line)[0]
            out.append(" ".join(re.sub(r"\[[^\]]*\]", " ", cmd).split()))
    return out


def readme_commands() -> list[str]:
    """The ``privrec ...`` lines of docs/cli.md's first bash block and of the README's "Three examples",
    comments and [optional] parts removed."""
    examples = README.read_text(encoding="utf-8").split("## Three examples", 1)[1]
    return list(dict.fromkeys(_bash_commands(CLI_DOC.read_text(encoding="utf-8")) + _bash_commands(examples)))


def _options(argv: list[str]) -> set[str]:
    return {a for a in argv if a.startswith("-")}


def test_every_readme_command_has_a_variant():
    commands = readme_commands()
    assert len(commands) >= 25
    missing = [c for c in commands if c not in VARIANTS]
    assert not missing, f"README commands without a variant in {__file__}: {missing}"
    stale = [c for c in VARIANTS if c not in commands]
    assert not stale, f"variants of commands no longer in the README: {stale}"
    unknown = [c for k, v in NEEDS.items() for c in (k, *v) if c not in VARIANTS]
    assert not unknown, f"NEEDS names lines that are not README commands: {unknown}"
    for readme, variant in VARIANTS.items():
        r, v = shlex.split(readme)[1:], shlex.split(variant.removeprefix("SLOW "))
        same_second = len(r) < 2 or r[1] == v[1] or r[1] == "ml-1m" or "." in r[1] or "/" in r[1]
        assert v[0] == r[0] and same_second and _options(r) <= _options(v), (readme, variant)


def _frame(n_users: int = 60, n_items: int = 150, per: int = 30, seed: int = 0) -> pd.DataFrame:
    """Two domains (books, movies) of the same users, a sequential signal in each."""
    rng = np.random.default_rng(seed)
    rows = []
    for d, dom in enumerate(("books", "movies")):
        for u in range(1, n_users + 1):
            start = int(rng.integers(n_items))
            for t in range(per):
                rows.append((f"u{u}", f"{dom[0]}{(start + t) % n_items}", 4.0, float(1000 * u + 100 * d + t), dom))
    return pd.DataFrame(rows, columns=["user_id", "item_id", "rating", "timestamp", "category"])


def _inter(frame: pd.DataFrame, path: Path) -> None:
    out = frame[["user_id", "item_id", "rating", "timestamp"]]
    out.columns = ["user_id:token", "item_id:token", "rating:float", "timestamp:float"]
    out.to_csv(path, sep="\t", index=False)


@pytest.fixture(scope="module")
def shared():
    """One working folder for every README command of this module (later commands read what earlier ones
    wrote, as a reader following the README would) and the README lines already run in it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="privrec-readme-") as d:
        yield {"path": Path(d), "done": set()}


@pytest.fixture
def workdir(shared, monkeypatch, movielens):
    movielens("ml-1m")
    movielens("ml-100k")
    monkeypatch.chdir(shared["path"])
    if not Path("shop.csv").exists():
        import shutil

        from privrec.data.fetch import cache_dir

        shutil.copytree(cache_dir() / "datasets" / "ml-100k", "ml100k-files")   # "a folder with the files"
        frame = _frame()
        frame.to_csv("shop.csv", index=False)
        _inter(frame, Path("my.inter"))
        _inter(frame[frame.category == "books"], Path("books.inter"))
        _inter(frame[frame.category == "movies"], Path("movies.inter"))
    return shared


def _run(variant: str) -> None:
    import time

    from privrec.cli import cli
    from privrec.cli.invocation import INVOCATION

    argv, t0 = shlex.split(variant), time.perf_counter()
    INVOCATION[:] = argv                      # as privrec.cli.main does: reports record the command (rerun reads it)
    try:
        res = CliRunner().invoke(cli, argv, catch_exceptions=False)
    finally:
        INVOCATION.clear()
    assert res.exit_code == 0, f"privrec {variant}\n{res.output}"
    print(f"{time.perf_counter() - t0:6.1f} s  privrec {variant}")
    for flag in ("-o", "--out", "--output"):
        if flag in argv:
            assert Path(argv[argv.index(flag) + 1]).exists(), f"privrec {variant}: wrote nothing"


def _ensure(readme: str, shared: dict) -> None:
    """Run the README line ``readme`` (its prerequisites first, each once per module)."""
    if readme in shared["done"]:
        return
    for need in NEEDS.get(readme, ()):
        _ensure(need, shared)
    setup = EXTRA_SETUP.get(readme)
    if callable(setup):
        setup()
    elif setup:
        _run(setup)
    _run(VARIANTS[readme].removeprefix("SLOW "))
    shared["done"].add(readme)


@pytest.mark.integration
@pytest.mark.parametrize("readme", [r for r, v in VARIANTS.items() if not v.startswith("SLOW ")])
def test_a_readme_command_runs(readme, workdir):
    """One README command (its smaller variant), after the README lines whose outputs it reads."""
    _ensure(readme, workdir)


@pytest.mark.slow
@pytest.mark.parametrize("readme", [r for r, v in VARIANTS.items() if v.startswith("SLOW ")])
def test_a_slow_readme_command_runs(readme, workdir):
    """The demo (minutes), one epoch of the full-size ML-1M matrix models (the quick PriCDR reproduction in
    the integration tests trains the same models on 600 users) and the PFCR reproduction (Ray start-ups)."""
    _ensure(readme, workdir)
