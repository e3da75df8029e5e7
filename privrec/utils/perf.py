"""CPU performance switches.

Training allocates and frees tensors of 100+ MB per batch (logits over all items). glibc
serves those with fresh ``mmap`` pages, so every batch pays ~200k page faults (about a
third of the step time on 2 cores). Raising the mmap and trim thresholds keeps freed
memory in the heap for reuse, the effect PyTorch's CPU tuning guide gets from jemalloc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_DONE = False


def tune_cpu_allocator() -> bool:
    """Make glibc malloc reuse large blocks. No-op off glibc or when PRIVREC_NO_MALLOPT is set."""
    global _DONE
    if _DONE or not sys.platform.startswith("linux") or os.environ.get("PRIVREC_NO_MALLOPT"):
        return _DONE
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = libc.mallopt(m_mmap_threshold, 1 << 30) == 1 and libc.mallopt(m_trim_threshold, 2**31 - 1) == 1
    except (OSError, AttributeError):
        ok = False
    _DONE = ok
    return ok
