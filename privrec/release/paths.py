"""Output paths that can never destroy input: checked before anything is read or written.

A command that reads data and writes results refuses, with one line naming both paths,

* an output that *is* an input (``x.csv -o x.csv``, also through ``./``, ``..``, symlinks),
* an output folder that *contains* an input (replacing the folder would delete it),
* an output inside privrec's dataset cache (it would overwrite a verified dataset),
* an input that lies inside the output (same reason as the second).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from privrec.errors import ParameterError

ATOMIC_SIBLINGS = (".inter", ".user", ".item")


def input_files(source: str | os.PathLike) -> list[Path]:
    """The files a dataset argument reads: the file itself, and for a RecBole ``.inter`` its
    ``.user``/``.item`` siblings; a dataset name reads its cache folder."""
    from privrec.data.registry import DATASETS

    if isinstance(source, str) and source in DATASETS:
        from privrec.data.fetch import dataset_dir

        return [dataset_dir(source)]
    path = Path(source)
    if path.suffix.lower() in ATOMIC_SIBLINGS:
        return [path.with_suffix(s) for s in ATOMIC_SIBLINGS if path.with_suffix(s).exists()] or [path]
    return [path]


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output(output: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), what: str = "output") -> Path:
    """Refuse ``output`` if writing it could overwrite or delete an input or the dataset cache."""
    from privrec.data.fetch import cache_dir

    out = Path(output).expanduser().resolve()
    cache = cache_dir().expanduser().resolve()
    if _inside(out, cache) or _inside(cache, out):
        raise ParameterError(f"{what} {output} lies in privrec's dataset cache ({cache}), which would overwrite a "
                             "verified dataset; write somewhere else")
    for raw in inputs:
        src = Path(raw).expanduser().resolve()
        if out == src:
            raise ParameterError(f"{what} {output} is the input {raw}; that would replace your data: choose another "
                                 "output path")
        if _inside(src, out):
            raise ParameterError(f"{what} {output} contains the input {raw}; replacing it would delete your data: "
                                 "choose an output outside it")
    return Path(output)
