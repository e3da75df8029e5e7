"""Where ``privrec train`` writes, and how two trains of one output never lose each other's seeds.

A ``train`` output is the report folder ``OUT`` (results, checkpoints, the release it trained on),
with ``OUT.progress.jsonl`` (one record per tested seed) and ``OUT.state/`` (per-epoch state) beside
it. Everything is checked before training starts (:func:`check_before_training`). Each seed trains
under its own lock (two processes never train one seed of one output at once), into a temporary
folder; the report is swapped in under the output's lock (:func:`finish`), and there an earlier
report of the *same configuration* keeps its other seeds and their checkpoints: two ``train … --out
o`` with seeds 0 and 1, run side by side or one after the other, leave one report of both seeds.
A report of another configuration is replaced whole, as the documentation of ``--out`` says.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from privrec.errors import ParameterError, ReleaseError
from privrec.experiments.progress import progress_path, state_dir
from privrec.utils.io import (
    _missing_parents,
    append_json_line,
    clean_stale,
    read_json_lines,
    swap_into_place,
    write_text_atomic,
)
from privrec.utils.outputs import check_progress_file, check_replaceable, output_lock, remove_lock_file, seal

KIND = "train"
LOCK_WAIT = 600.0          # seconds a finishing train waits for another one's swap (seconds of work)


def check_before_training(out_dir: Path) -> None:
    """Every refusal that does not need the trained model, before hours of training: the folder must be
    empty, absent or a ``train`` report privrec wrote; the progress file and state folder privrec's."""
    check_replaceable(out_dir, KIND)
    check_progress_file(progress_path(out_dir))
    state = state_dir(out_dir)
    if state.is_symlink() or (state.exists() and (not state.is_dir() or any(
            not (f.suffix == ".pt" or f.name.startswith(".")) for f in state.iterdir()))):
        raise ParameterError(f"{state} holds files privrec did not write (it keeps training state there and "
                             "deletes the folder when done); move them or choose another --out")


@contextlib.contextmanager
def seed_locks(out_dir: Path, seeds: Sequence[int]) -> Iterator[None]:
    """One lock per seed of this output, held while it trains: a second process training the same seed
    into the same output is refused at once (other seeds may train side by side). The lock files, and
    folders made for them that stayed empty (a mistyped dataset), are removed when it ends."""
    created = _missing_parents(out_dir)
    names = [Path(f"{str(out_dir).rstrip('/')}.seed{seed}") for seed in seeds]
    try:
        with contextlib.ExitStack() as stack:
            for seed, name in zip(seeds, names):
                try:
                    stack.enter_context(output_lock(name))
                except ReleaseError:
                    raise ReleaseError(f"another privrec process is training seed {seed} into {out_dir}; wait for it "
                                       "or train other seeds") from None
            yield
    finally:
        for name in names:
            remove_lock_file(name)
        for folder in created:                     # made for the lock files: removed if nothing else is in them
            with contextlib.suppress(OSError):
                folder.rmdir()


def record(out_dir: Path, line: dict) -> None:
    """Append one tested seed's record to ``OUT.progress.jsonl`` (under that file's lock)."""
    progress = progress_path(out_dir)
    with output_lock(progress, wait=60.0):
        check_progress_file(progress)
        append_json_line(progress, line)


def finish(out_dir: Path, tmp: Path, result: dict, markdown) -> dict:
    """Under the output's lock: keep an earlier report's other seeds of this configuration (runs and
    checkpoints), write the report into ``tmp``, mark it, swap it into place, and drop the progress
    records the report now holds. Returns the result written (``markdown(result)`` its text)."""
    from privrec.experiments.report import write_report
    from privrec.experiments.sequential_report import keep_earlier_seeds

    with output_lock(out_dir, wait=LOCK_WAIT):
        check_replaceable(out_dir, KIND)               # again: another process may have written meanwhile
        clean_stale(out_dir)                           # leftovers of this output's dead writers only
        earlier = _read(out_dir / "results.json") if out_dir.is_dir() else None
        result, kept = keep_earlier_seeds(result, earlier)
        for run in kept:
            name = run.get("checkpoint")
            if name and (out_dir / name).is_file() and not (tmp / name).exists():
                _link_or_copy(out_dir / name, tmp / name)
        write_report(tmp, result, markdown(result))
        from privrec.experiments.learning_curve import plot

        plot(result["runs"], result["config"]["train"]["select_metric"], tmp / "learning_curve.png")
        seal(tmp, KIND)
        swap_into_place(tmp, out_dir)
        _drop_records(progress_path(out_dir), result)
    return result


def _drop_records(progress: Path, result: dict) -> None:
    """Remove the progress lines of seeds the report holds (this configuration only); the file goes
    when nothing is left."""
    from privrec.experiments.sequential_report import same_configuration

    with output_lock(progress, wait=60.0):
        if not progress.is_file():
            return
        seeds = {run["seed"] for run in result["runs"]}
        keep = [r for r in read_json_lines(progress)
                if not (isinstance(r.get("run"), dict) and r["run"].get("seed") in seeds
                        and isinstance(r.get("config"), dict) and same_configuration(r["config"], result["config"]))]
        if keep:
            write_text_atomic(progress, "".join(json.dumps(r) + "\n" for r in keep))
        else:
            progress.unlink(missing_ok=True)


def _read(path: Path) -> dict | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
