"""Children that die with their parent: on Linux the kernel signals a child when the process that started it dies
(kill -9, the OOM killer), so no orphan keeps a GPU, a lock or a half-written folder nobody owns."""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def parent_death_signal(sig: signal.Signals) -> Callable[[], None] | None:
    """A function that, called in a child, asks the kernel to send it `sig` when its parent dies; None where the OS
    has no such request. Resolved here, in the parent: a forked child should not load libraries."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]

    def ask() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig))

    return ask
