"""Atomic output: write to a temporary sibling, then rename.

A crash or an exception leaves either the old file or no file, never a partial one. Temporary
siblings are named ``.NAME.<writer>.<random>.tmp`` and a folder being swapped out ``.NAME.<writer>.old``,
where ``<writer>`` is :func:`writer_tag` (a hash of the host name and the process id). The next
write to the same target removes only siblings of *this* target with that pattern whose writer ran
on this host and no longer runs (SIGKILL, power loss); a folder caught between its two renames
(its ``.old`` present, ``NAME`` missing) is restored first. Nothing else beside a target is touched:
a user's ``.NAME.old/`` or ``.NAME.mine.tmp`` stays, and so does a live writer's temporary.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_TAG = re.compile(r"([0-9a-f]{8})-(\d+)")


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file's bytes (hex), read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def writer_tag() -> str:
    """This process's name in its temporaries: ``<host hash>-<pid>``."""
    return f"{_HOST}-{os.getpid()}"


def writer_gone(tag: str) -> bool:
    """Whether the writer named by ``tag`` ran on this host and no longer runs (a tag of another
    host, or anything that is not a tag, is never declared gone: its owner may still be writing)."""
    m = _TAG.fullmatch(tag)
    return bool(m) and m.group(1) == _HOST and not _alive(int(m.group(2)))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    The caller writes the file at the yielded path by any means (pandas, torch, ...).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{writer_tag()}.", suffix=".tmp", dir=target.parent)
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
    tmp = temporary_dir(target)
    try:
        yield tmp
        swap_into_place(tmp, target)
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


def temporary_dir(target: Path) -> Path:
    """A fresh temporary folder beside ``target``, named as this writer's (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{writer_tag()}.", suffix=".tmp", dir=target.parent))
    _default_mode(tmp, 0o777)                       # mkdtemp creates 0700
    return tmp


def swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the folder ``tmp`` onto ``target``; an existing ``target`` is moved to this writer's
    ``.NAME.<writer>.old`` first and removed after (a kill in between is repaired by :func:`clean_stale`)."""
    if target.exists():
        backup = target.with_name(f".{target.name}.{writer_tag()}.old")
        os.replace(target, backup)
        os.replace(tmp, target)
        shutil.rmtree(backup, ignore_errors=True)
    else:
        os.replace(tmp, target)
    _fsync(target.parent)


def clean_stale(target: Path) -> list[Path]:
    """Remove ``target``'s temporaries and backups left by writers of this host that no longer run;
    restore a backup whose target is missing (a kill between :func:`swap_into_place`'s two renames).
    Returns what was removed. Only names of privrec's pattern for *this* target are considered."""
    removed = []
    prefix = f".{target.name}."
    for sibling in target.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        tag = sibling.name[len(prefix):].split(".", 1)[0]
        if writer_gone(tag):
            _remove(sibling)
            removed.append(sibling)
    for backup in target.parent.glob(f"{glob.escape(prefix)}*old"):
        if not writer_gone(backup.name[len(prefix):-len("old")].rstrip(".")):
            continue                    # a live writer's, another host's, or not privrec's name (``.NAME.old``)
        if not target.exists() and not target.is_symlink():
            os.replace(backup, target)  # its writer died between the two renames: the previous output returns
        else:
            _remove(backup)
            removed.append(backup)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


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
    crash (or anything that is not a UTF-8 JSON object) is skipped. A missing file reads as no lines."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue                    # cut by a crash, or bytes that are not a record
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
