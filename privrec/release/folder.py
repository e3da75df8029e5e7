"""A release is one folder: the published data files and ``certificate.json``, renamed into place once.

Why a folder: the certificate must never describe data it was not issued for. Data and
certificate are written into a temporary sibling folder, the certificate records the SHA-256
and size of every data file, and the folder replaces the target in one rename, under an
exclusive lock on the target. So a killed, failed or concurrent publish leaves either the
previous release or the new one, never data under another run's certificate; and every reader
(:func:`read_release`) re-hashes the files and refuses a release whose files do not match.

Layout (a RecBole dataset folder when the data is ``NAME.inter`` + ``NAME.user``)::

    out/drama/
        drama.inter          published rows
        drama.user           every published user (a row the mechanism emptied is still published)
        certificate.json     format privrec-release/2: guarantee, input, files {name: sha256, bytes}, ...

The random seed is *not* in the certificate unless the caller records it on purpose (research
reproductions): anyone holding seed and release can undo the noise. See :mod:`privrec.release.certificate`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from privrec.errors import DataFormatError, ParameterError, ReleaseError
from privrec.release.verify import check_certificate
from privrec.utils.io import _fsync, clean_stale, sha256_file, swap_into_place, temporary_dir, write_json_atomic
from privrec.utils.outputs import check_output_name, check_replaceable, output_lock

FORMAT = "privrec-release/2"
CERTIFICATE = "certificate.json"


@dataclass(frozen=True)
class Release:
    """A verified release: its folder and certificate; :meth:`path` gives a data file."""

    folder: Path
    certificate: dict

    @property
    def files(self) -> dict[str, dict]:
        return self.certificate["output"]["files"]

    def path(self, name: str) -> Path:
        if name not in self.files:
            raise ReleaseError(f"{self.folder}: the release has no file {name!r} (it has {sorted(self.files)})")
        return self.folder / name

    def data_file(self, suffixes: tuple[str, ...]) -> Path:
        """The one data file with one of ``suffixes`` (e.g. the ``.inter``/``.csv``/``.parquet`` table)."""
        hits = [n for n in self.files if Path(n).suffix.lower() in suffixes]
        if len(hits) != 1:
            raise ReleaseError(f"{self.folder}: expected one data file ending in {'/'.join(suffixes)}, found {hits}")
        return self.folder / hits[0]


def is_release(folder: Path) -> bool:
    """Whether ``folder`` holds a privrec certificate (the files are not checked here)."""
    cert = folder / CERTIFICATE
    if not cert.is_file():
        return False
    try:
        return json.loads(cert.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return False


@contextlib.contextmanager
def exclusive(target: Path) -> Iterator[None]:
    """The exclusive lock of the output ``target`` (:func:`privrec.utils.outputs.output_lock`), with the
    leftovers of this target's dead writers cleaned once it is held (:func:`privrec.utils.io.clean_stale`)."""
    with output_lock(target):
        clean_stale(target)
        yield


def write_release(folder: str | os.PathLike, write_files: Callable[[Path], None], certificate: dict) -> Release:
    """Publish: ``write_files(tmp)`` writes the data files into a fresh temporary folder; their
    SHA-256 and sizes go into ``certificate['output']['files']``; ``certificate.json`` is written
    last; the folder then replaces ``folder`` in one rename. Under an exclusive lock on ``folder``;
    an existing folder is replaced only if it is a privrec release (or empty)."""
    target = Path(folder)
    check_replaceable(target, "release")
    with exclusive(target):
        tmp = temporary_dir(target)
        try:
            write_files(tmp)
            names = sorted(p.name for p in tmp.iterdir())
            if not names:
                raise ParameterError("the release would hold no data file")
            if CERTIFICATE in names:
                raise ParameterError(f"a data file may not be named {CERTIFICATE}")
            files = {}
            for name in names:
                p = tmp / name
                if not p.is_file():
                    raise ParameterError(f"release entries must be plain files, {name!r} is not")
                _fsync(p)
                files[name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
            cert = json.loads(json.dumps(certificate, default=str))
            cert["format"] = FORMAT
            cert.setdefault("output", {})["files"] = files
            write_json_atomic(tmp / CERTIFICATE, cert)       # the release's proof of ownership: files + digests
            _fsync(tmp)
            check_replaceable(target, "release")        # re-checked under the lock
            swap_into_place(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return Release(target, cert)


def read_release(folder: str | os.PathLike) -> Release:
    """Open a release and verify it: the certificate must be privrec's, every file it lists must exist
    with the recorded size and SHA-256, and its guarantee must follow from its own mechanism and
    parameters (:func:`privrec.release.verify.check_certificate`). Anything else is refused with the reason."""
    folder = Path(folder)
    if not folder.is_dir():
        hint = ""
        if folder.is_file():
            hint = (f"; {folder} is a file: a release is the folder holding the data and its certificate.json "
                    f"(give {folder.parent})" if (folder.parent / CERTIFICATE).is_file() else
                    "; uncertified data is refused: publish it with `privrec publish`")
        raise ReleaseError(f"no release at {folder}{hint}")
    cert_path = folder / CERTIFICATE
    if not cert_path.is_file():
        raise ReleaseError(f"{folder} has no {CERTIFICATE}: uncertified data is refused (publish it with "
                           "`privrec publish`, which writes data and certificate as one folder)")
    try:
        cert = json.loads(cert_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReleaseError(f"{cert_path} is not a readable certificate ({exc}); publish again") from None
    if not isinstance(cert, dict) or cert.get("format") != FORMAT:
        found = cert.get("format") if isinstance(cert, dict) else type(cert).__name__
        raise ReleaseError(f"{cert_path}: not a {FORMAT} certificate (found {found!r}); publish again with this privrec")
    files = cert["output"].get("files") if isinstance(cert.get("output"), dict) else None
    if not isinstance(files, dict) or not files or not all(isinstance(m, dict) for m in files.values()):
        raise ReleaseError(f"{cert_path} lists no data files (output.files: name -> sha256, bytes); publish again")
    for name, meta in files.items():
        path = folder / name
        if Path(name).name != name or not path.is_file():
            raise ReleaseError(f"{folder}: the certified file {name!r} is missing; the release is incomplete, "
                               "publish again")
        if path.stat().st_size != meta.get("bytes") or sha256_file(path) != meta.get("sha256"):
            raise ReleaseError(f"{path} does not match its certificate (SHA-256 differs): the data was changed after "
                               "it was certified; publish again")
    check_certificate(cert, folder)                      # and the certificate itself: its numbers must follow
    return Release(folder, cert)


def release_folder(output: str | os.PathLike) -> Path:
    """The release folder a user named with ``-o``; a data-file name is refused with the fix."""
    out = Path(output)
    check_output_name(out, "-o")
    if out.suffix.lower() in (".inter", ".csv", ".parquet", ".json", ".npy", ".npz"):
        raise ParameterError(f"-o {output}: a release is a folder (data + certificate.json written as one); give a "
                             f"folder such as {out.with_suffix('')} and choose the data format with --format")
    return out


def load_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: not readable JSON ({exc})") from None
