"""Output folders privrec can prove it wrote, and the one lock every writer takes.

privrec replaces a folder only where it can prove that it wrote every file in it: each report
folder it writes (a ``train`` report, a ``reproduce`` report, a ``results merge``) carries a
marker, ``.privrec``, written last, that names the kind of output and lists every file with its
SHA-256; a release's proof is its certificate, which lists its data files the same way. Before replacing a folder, a writer checks that marker against the folder: a
file it does not list (``thesis.tex``), a listed file whose bytes changed (an edited
``results.md``), or a marker of another kind of output (``publish`` over a ``train`` report)
means refuse, naming the files, and nothing is deleted. Folders written before the marker existed
are recognised by what privrec wrote then (a release's certificate lists its files with digests; a
report folder holds only ``results.json``/``results.md``/plots/checkpoints and privrec's stamp);
anything more in them is refused the same way.

Every writer of an output ``OUT`` (``publish``, ``train``, ``reproduce``, ``results merge``)
holds :func:`output_lock` on it — one lock file ``.OUT.lock`` beside it, through the ``filelock``
package — so a second process writing the same output is refused at once ("another privrec
process is writing OUT") or, for short writes, waits its turn. ``OUT.progress.jsonl`` and
``OUT.state/`` travel with ``OUT`` under the same lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from privrec.errors import ParameterError, ReleaseError
from privrec.utils.io import sha256_file, write_json_atomic, writer_tag

MARKER = ".privrec"
FORMAT = "privrec-output/1"
CERTIFICATE = "certificate.json"
RELEASE_FORMAT = "privrec-release/2"
REPORT_FILES = ("results.json", "results.md")     # what a report folder held before the marker


# ----------------------------------------------------------------------------------- the lock
_LOCKS: dict[str, object] = {}
_LOCKS_GUARD = threading.Lock()


def check_output_name(target: Path, flag: str = "--out") -> None:
    """Refuse an output that names no folder (``''``, ``.``, ``..``) before anything is written."""
    if str(target) in ("", ".", "..") or target.name in ("", ".", ".."):
        raise ParameterError(f"{flag} {str(target)!r} names no output folder of its own (privrec writes a folder and "
                             "replaces it whole); give a new folder name such as runs/mine")


@contextlib.contextmanager
def output_lock(target: str | os.PathLike, wait: float = 0.0) -> Iterator[None]:
    """Hold the exclusive lock of the output ``target`` (lock file ``.NAME.lock`` beside it). Another
    process holding it makes this raise at once (``wait=0``) or after ``wait`` seconds, naming the output;
    within one process the lock is re-entrant (a ``reproduce`` holds it and its report writer takes it again)."""
    from filelock import FileLock, Timeout

    target = Path(target)
    check_output_name(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    path = str((target.parent / f".{target.name}.lock").resolve())
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(path, FileLock(path, thread_local=False))
    try:
        lock.acquire(timeout=wait, poll_interval=0.05)
    except Timeout:
        raise ReleaseError(f"another privrec process is writing {target} right now; wait for it to finish or write to "
                           "another output") from None
    try:
        yield
    finally:
        lock.release()


def remove_lock_file(target: str | os.PathLike) -> None:
    """Remove ``target``'s lock file if no process holds it (best effort, POSIX): taken non-blocking,
    checked to still be the file at that path, then unlinked. For locks of short-lived names (a seed
    of a ``train``) that would otherwise pile up beside the output."""
    try:
        import fcntl
    except ImportError:                     # Windows: the lock file stays
        return
    target = Path(target)
    path = target.parent / f".{target.name}.lock"
    with _LOCKS_GUARD:
        if str(path.resolve()) in _LOCKS and _LOCKS[str(path.resolve())].is_locked:
            return                          # this process still holds it
        _LOCKS.pop(str(path.resolve()), None)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino == os.stat(path).st_ino:
            path.unlink()
    except OSError:
        pass                                # held by another process, or already gone
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------- ownership
@dataclass
class Ownership:
    """What privrec can prove about a folder: the kind of output (None: a report of unknown kind,
    written before the marker), files it did not write, and its files changed since."""

    kind: str | None
    foreign: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def files_of(folder: Path) -> list[str]:
    """Every file under ``folder`` (relative, ``/``-separated, sorted), the marker excepted."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if (p.is_file() or p.is_symlink()) and p.relative_to(folder).as_posix() != MARKER)


def seal(folder: str | os.PathLike, kind: str) -> None:
    """Write the marker into ``folder`` (last, once every other file is in place): the kind and every
    file with its SHA-256 and size. (A release needs none: its certificate lists its files.)"""
    folder = Path(folder)
    files = {name: {"sha256": sha256_file(folder / name), "bytes": (folder / name).stat().st_size}
             for name in files_of(folder)}
    write_json_atomic(folder / MARKER, {"format": FORMAT, "kind": kind, "files": files, "writer": writer_tag(),
                                        "written": datetime.now(timezone.utc).isoformat(timespec="seconds")})


def ownership(folder: Path) -> Ownership | None:
    """What privrec wrote in ``folder``, checked against the folder's files; None where privrec makes
    no claim on it at all (no marker, no certificate, no report of privrec's)."""
    marker = _read_json(folder / MARKER)
    if isinstance(marker, dict) and marker.get("format") == FORMAT and isinstance(marker.get("files"), dict):
        listed = marker["files"]
        kind = marker.get("kind") if isinstance(marker.get("kind"), str) else None
    elif _is_release(cert := _read_json(folder / CERTIFICATE)):
        listed, kind = dict(cert.get("output", {}).get("files") or {}), "release"
        listed[CERTIFICATE] = None                     # the certificate itself has no digest to check
    elif (folder / MARKER).is_file() or _privrec_report(folder):
        return _legacy_report(folder)
    else:
        return None
    own = Ownership(kind)
    for name in files_of(folder):
        meta = listed.get(name, False)
        if meta is False:
            own.foreign.append(name)
        elif isinstance(meta, dict) and (not (folder / name).is_file() or (folder / name).stat().st_size != meta.get("bytes")
                                         or sha256_file(folder / name) != meta.get("sha256")):
            own.changed.append(name)
    return own


def check_replaceable(folder: str | os.PathLike, kind: str) -> None:
    """Refuse to replace ``folder`` with an output of ``kind`` unless privrec wrote every file in it, they
    are unchanged, and it holds the same kind of output: privrec never deletes a user's files."""
    folder = Path(folder)
    check_output_name(folder)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ParameterError(f"{folder} exists and is not a folder; a {kind} is a folder: choose another output")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    own = ownership(folder)
    if own is None:
        raise ParameterError(f"{folder} is a folder with files privrec did not write ({_few(files_of(folder))}); privrec "
                             f"never deletes them: choose a new or empty folder for the {kind}")
    problems = ([f"a {own.kind or 'report'} written by privrec (a {kind} never replaces another kind of output)"]
                if own.kind != kind and (own.kind is not None or kind == "release") else [])
    problems += ([f"files privrec did not write: {_few(own.foreign)}"] if own.foreign else []) + \
                ([f"files changed since privrec wrote them: {_few(own.changed)}"] if own.changed else [])
    if problems:
        raise ParameterError(f"{folder} holds {'; and '.join(problems)}; replacing the folder would delete them: choose "
                             f"another folder for the {kind} (or move or remove them yourself)")


def check_progress_file(path: str | os.PathLike) -> None:
    """``OUT.progress.jsonl`` is privrec's only if every line is one of its records (or a line cut by a
    crash); a user's file of that name is refused, never appended to or deleted."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ParameterError(f"{path} exists and is not a file privrec wrote; privrec keeps its progress records "
                             "there: move it or choose another --out")
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        lines = path.read_bytes().decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = None
    records = 0
    for line in lines or ():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue                                    # a line cut by a crash
        if not (isinstance(obj, dict) and isinstance(obj.get("run"), dict)
                and ("fingerprint" in obj or "config" in obj)):
            records = -1
            break
        records += 1
    if records <= 0:
        raise ParameterError(f"{path} is not a progress file privrec wrote (privrec keeps its per-run records there and "
                             "removes it when done); move it or choose another --out")


# ---------------------------------------------------------------------------------- helpers
def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _is_release(cert) -> bool:
    return isinstance(cert, dict) and cert.get("format") == RELEASE_FORMAT and \
        isinstance(cert.get("output"), dict) and isinstance(cert["output"].get("files"), dict)


def _privrec_report(folder: Path) -> bool:
    res = _read_json(folder / "results.json")
    return isinstance(res, dict) and isinstance(res.get("environment"), dict) and "privrec" in res["environment"]


def _legacy_report(folder: Path) -> Ownership:
    """A report folder from before the marker: ``results.json``/``results.md``, plots, checkpoints and
    a trained-on release; its kind from the command that wrote it. Its files carry no digests."""
    res = _read_json(folder / "results.json")
    command = str(res.get("command") or "") if isinstance(res, dict) else ""
    words = command.split()
    kind = None
    if words[1:2] == ["train"]:
        kind = "train"
    elif words[1:3] == ["results", "merge"]:
        kind = "merge"
    elif words[1:2] == ["reproduce"] and len(words) > 2:
        kind = f"reproduce {words[2]}"
    elif isinstance(res, dict) and res.get("kind") in ("pricdsr", "pricdr", "rr", "dipsgnn", "pfcr"):
        kind = f"reproduce {res['kind']}"
    release = ownership(folder / "release") if (folder / "release").is_dir() else None
    foreign = []
    for name in files_of(folder):
        top, _, sub = name.partition("/")
        if name in REPORT_FILES or (not sub and name.endswith((".png", ".pt"))):
            continue
        if top == "release" and release is not None and release.kind == "release" and sub not in release.foreign:
            continue
        foreign.append(name)
    return Ownership(kind, foreign, [f"release/{f}" for f in (release.changed if release else [])])


def _few(names: list[str], show: int = 5) -> str:
    more = f" and {len(names) - show} more" if len(names) > show else ""
    return ", ".join(names[:show]) + more
