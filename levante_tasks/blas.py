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

# What OpenBLAS reads for its thread count, in the order it reads them: a user who set one keeps it.
THREAD_COUNT_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


@contextlib.contextmanager
def loaded_without_workers() -> Iterator[None]:
    """An OpenBLAS that loads within the block starts no worker (OPENBLAS_NUM_THREADS=1), unless the environment
    already sets a thread count. Afterwards the environment is as it was, so programs started later get the
    user's. A library loaded before the block keeps its threads: `one_thread` limits it."""
    if any(name in os.environ for name in THREAD_COUNT_VARIABLES):
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def one_thread() -> contextlib.AbstractContextManager:
    """BLAS limited to one thread within the block, for a library loaded with workers (a caller's numpy): for
    products of at most ~2000 x 100 x 100, OpenBLAS's threads cost more than they save (18x slower measured on a
    busy 2-core machine). threadpoolctl comes with scikit-learn (an lmms-eval dependency); without it BLAS keeps
    its threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
