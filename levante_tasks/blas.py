"""OpenBLAS worker threads in levante-tasks' own commands: none started at load, one used for small products.

numpy and scipy each bundle an OpenBLAS. When it loads, it starts a worker thread for each core but one, and each
worker busy-waits for work (OpenBLAS's thread timeout) before it sleeps. A command that does no large matrix product
pays that spin at every start: measured on 2 cores, `import numpy` takes 0.16 s of CPU with the workers and 0.07 s
without, numpy and scipy.optimize together 0.55 s and 0.36 s. The spin grows with the cores: one worker per extra
core and library.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# What OpenBLAS reads for its thread count, the first that holds a count >= 1 winning: a user who set one keeps it.
THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "OPENBLAS_DEFAULT_NUM_THREADS", "GOTO_NUM_THREADS",
                          "OMP_NUM_THREADS")


def _user_count() -> bool:
    """Whether the environment sets a thread count OpenBLAS takes (a whole number >= 1; it reads an empty value or
    0 as unset)."""
    for name in THREAD_COUNT_VARIABLES:
        try:
            if int(os.environ.get(name, "")) >= 1:
                return True
        except ValueError:
            continue
    return False


@contextlib.contextmanager
def loaded_without_workers() -> Iterator[None]:
    """An OpenBLAS that loads within the block starts no worker (OPENBLAS_NUM_THREADS=1), unless the environment
    sets a thread count. Afterwards OPENBLAS_NUM_THREADS is as it was (unless the block changed it), so programs
    started later get the user's environment. A library loaded before the block keeps its threads: `one_thread`
    limits it."""
    if _user_count():
        yield
        return
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if os.environ.get("OPENBLAS_NUM_THREADS") == "1":
            if before is None:
                del os.environ["OPENBLAS_NUM_THREADS"]
            else:
                os.environ["OPENBLAS_NUM_THREADS"] = before


def one_thread() -> contextlib.AbstractContextManager:
    """BLAS limited to one thread within the block, for a library loaded with workers (a caller's numpy): for
    products of at most ~2000 x 100 x 100, OpenBLAS's threads cost more than they save (18x slower measured on a
    busy 2-core machine). threadpoolctl (~14 ms) is imported on first use, not with this module, which every
    `compare` and `prepare` loads."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
