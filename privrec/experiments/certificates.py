"""Release certificates that travel with the run records (issue 75): a run that read a release keeps that
release's certificate in its progress record, so a report written where the release folders are absent
(a fresh clone: they are data, not committed) still lists every release its runs read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path


def certificate_of(folder: Path) -> dict:
    """What a run's record keeps of the release it read (``extra["certificate"]``): the folder's name and
    its certificate's summary, input and guarantee."""
    from privrec.release.folder import read_release

    cert = read_release(folder).certificate
    return {"release": folder.name, **{k: cert[k] for k in ("summary", "input", "guarantee")}}


def record_certificates(exp, specs: Sequence, finished: dict, log: Callable[[str], None]) -> list:
    """Give every finished run that read a release and was recorded without its certificate that certificate
    (republishing the release from its seed where the folder is not here); returns the records it changed,
    for the caller to record again."""
    from privrec.release.folder import is_release

    release_of = getattr(exp, "release_of", None)
    if release_of is None:
        return []
    todo = [(s, release_of(s)) for s in specs if s.key in finished and "certificate" not in finished[s.key].extra]
    todo = [(s, folder) for s, folder in todo if folder is not None]
    if todo:
        log(f"recording the release certificate of {len(todo)} finished run(s) recorded without one")
    changed = []
    for spec, folder in todo:
        if not is_release(folder):
            exp.prepare(spec, log)            # the same seed publishes the same release
        record = finished[spec.key]
        record.extra = {**record.extra, "certificate": certificate_of(folder)}
        changed.append(record)
    return changed
