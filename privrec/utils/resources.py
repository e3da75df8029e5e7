"""Refuse a request for more memory than the machine has, before allocating it.

A typo such as ``--n-prime 1e12`` or ``--max-len 1000000000`` would otherwise end in a
MemoryError (or the OOM killer) after the data was loaded; :func:`check_allocation` turns it into
one line naming the option, the size it asks for, and the fix.
"""

from __future__ import annotations

import os

from privrec.errors import ParameterError


def physical_memory() -> int:
    """Bytes of physical memory (16 GiB where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 16 << 30


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


def check_allocation(nbytes: float, what: str, fix: str) -> None:
    """Raise :class:`ParameterError` if ``what`` needs more than the machine's physical memory."""
    limit = physical_memory()
    if nbytes > limit:
        raise ParameterError(f"{what} needs about {human_bytes(nbytes)}, more than this machine's "
                             f"{human_bytes(limit)} of memory; {fix}")


def check_top_k(ks, n_items: int, batch_size: int = 1024) -> None:
    """A cut-off the evaluator cannot hold in memory (k ranks per evaluated user of a batch). A k above the
    catalogue is allowed (the list is then the whole catalogue) as long as it fits."""
    k = max(ks)
    check_allocation(8.0 * k * batch_size, f"--ks {k}",
                     f"a top-k list longer than the {n_items:,} items ranks nothing more: choose k <= {n_items:,}")
