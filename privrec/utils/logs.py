"""privrec's messages through Python ``logging`` (logger ``"privrec"``), and a log file per run.

The library reports through ``log`` callbacks (``log=print`` by default); the CLI passes :func:`echo`, which
prints a message as before *and* sends it to the ``privrec`` logger, where :func:`run_log` attaches a file beside
the run's output (``OUT.log``: every message with its time, appended across sessions, so an interrupted and
resumed run keeps one history). A library user gets the same with ``log=logging.getLogger("privrec").info``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

LOGGER = logging.getLogger("privrec")
LOGGER.addHandler(logging.NullHandler())     # a library never prints through logging unless its user asks


def echo(message: str) -> None:
    """Print ``message`` to stderr (the CLI's progress channel) and log it at INFO."""
    print(message, file=sys.stderr, flush=True)
    LOGGER.info(message)


def log_path(out: str | Path) -> Path:
    """The log file of the run writing ``out``: ``OUT.log`` beside it."""
    return Path(str(out).rstrip("/") + ".log")


@contextlib.contextmanager
def run_log(out: str | Path, command: str | None = None) -> Iterator[Path]:
    """While the block runs, every ``privrec`` message is appended to :func:`log_path` (created with its folder),
    after a line naming ``command`` (the command line that started it). A run refused for its input (a
    :class:`~privrec.errors.PrivrecError`) leaves nothing behind: the log and folders this call created are
    removed (an earlier run's log is kept, with the refusal appended)."""
    from privrec.errors import PrivrecError

    path = log_path(out)
    existed = path.exists()
    created = [p for p in reversed(path.parents) if not p.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
    level = LOGGER.level
    LOGGER.setLevel(logging.INFO)
    LOGGER.addHandler(handler)
    refused = False
    try:
        LOGGER.info("start: %s", command or "(library call)")
        yield path
    except PrivrecError as exc:
        LOGGER.info("refused: %s", exc)
        refused = True
        raise
    finally:
        LOGGER.removeHandler(handler)
        handler.close()
        LOGGER.setLevel(level)
        if refused and not existed:
            path.unlink(missing_ok=True)
            for folder in reversed(created):          # innermost first, only if this call made it and it is empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
