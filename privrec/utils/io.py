"""Atomic output: write to a temporary sibling, then rename.

A crash or an exception leaves either the old file or no file, never a partial one. Temporary
siblings are named ``.NAME.<pid>.<random>.tmp``; one left by a process that no longer runs
(SIGKILL, power loss) is removed by the next write to the same target, and a folder caught
between its two renames (``.NAME.old`` present, ``NAME`` missing) is restored first.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    The caller writes the file at the yielded path by any means (pandas, torch, ...).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _default_mode(tmp_path, 0o666)                  # mkstemp creates 0600
        _fsync(tmp_path)                                # data on disk before the rename makes it visible
        os.replace(tmp_path, target)
        _fsync(target.parent)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; it replaces ``path`` on success."""
    target = Path(path)
    created = _missing_parents(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent))
    _default_mode(tmp, 0o777)                       # mkdtemp creates 0700
    try:
        yield tmp
        if target.exists():
            backup = target.with_name(f".{target.name}.old")
            shutil.rmtree(backup, ignore_errors=True)
            os.replace(target, backup)
            os.replace(tmp, target)
            shutil.rmtree(backup, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in created:                      # leave no empty folders behind either
            try:
                folder.rmdir()
            except OSError:
                break
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:             # someone else's live process
        return True
    return True


def clean_stale(target: Path) -> list[Path]:
    """Remove ``target``'s temporary siblings whose writing process is gone; restore a folder
    left as ``.NAME.old`` by a kill between atomic_dir's two renames. Returns what was removed."""
    removed = []
    prefix = f".{target.name}."
    for sibling in target.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        pid = sibling.name[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue                    # not ours, or its writer still runs
        if sibling.is_dir() and not sibling.is_symlink():
            shutil.rmtree(sibling, ignore_errors=True)
        else:
            sibling.unlink(missing_ok=True)
        removed.append(sibling)
    backup = target.with_name(f".{target.name}.old")
    if backup.is_dir() and not target.exists():
        os.replace(backup, target)
    return removed


def _default_mode(path: Path, base: int) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would have: ``base`` minus the umask."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, base & ~umask)


def _fsync(path: Path) -> None:
    """Flush a file (or a folder's entries) to disk; a no-op where the OS refuses (e.g. folders on Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _missing_parents(target: Path) -> list[Path]:
    """Parents of ``target`` that do not exist yet, deepest first."""
    out = []
    parent = target.absolute().parent
    while not parent.exists():
        out.append(parent)
        parent = parent.parent
    return out


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json_atomic(path: str | os.PathLike, obj: Any) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def append_json_line(path: str | os.PathLike, obj: Any) -> Path:
    """Append ``obj`` as one JSON line, flushed and fsynced: a crash loses at most the line being
    written, and a line cut by an earlier crash is closed first so it cannot swallow this one
    (readers skip lines that do not parse)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cut = False
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            cut = fh.read(1) != b"\n"
    line = json.dumps(obj, default=_json_default)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(("\n" if cut else "") + line + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return path


def read_json_lines(path: str | os.PathLike) -> list[dict]:
    """The JSON objects of a file written by :func:`append_json_line`, in order; a line cut by a
    crash (or anything that is not a JSON object) is skipped. A missing file reads as no lines."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")
