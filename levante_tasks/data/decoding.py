"""Decode many pictures on several cores: one verdict per file, in the order asked, the same as one core's.

A verdict is (why the picture does not decode or None, the OSError that kept it from being read or None, the sha256
of the bytes read and decoded or None): each file is read once, and its hash comes from the bytes decoded. Workers
only read: they write nothing, so a killed run leaves no output of theirs. On Linux they are forked (no
interpreter start-up) and die with the process that started them (a forked worker shares the parent's open
files, `prepare`'s lock included: an orphan would hold it); elsewhere they start fresh (`spawn`), sharing nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import NamedTuple, TypeVar

from PIL import Image

from levante_tasks.data.visuals import decode_problem
from levante_tasks.errors import LevanteError
from levante_tasks.parent_death import parent_death_signal


class Verdict(NamedTuple):
    """Whether one picture decodes: why not (None: it does), the error that kept it from being read, its sha256."""

    why: str | None
    error: OSError | None
    sha256: str | None


T = TypeVar("T")
R = TypeVar("R")
PICTURES_PER_WORKER = 32  # below this many pictures per core, starting a worker costs more than it saves
PICTURES_PER_BATCH = 32  # at most this many pictures go to a worker in one message
BATCHES_PER_WORKER = 3  # batches handed out and not yet collected, per worker: what bounds the memory of a run
KEPT_PICTURE_BLOCKS = 8  # freed picture buffers Pillow keeps for the next decode (each at most its block size, 16 MiB)
_DIE_WITH_PARENT = parent_death_signal(signal.SIGKILL)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS reports one, else the machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def verdict(path: str | os.PathLike[str]) -> Verdict:
    """Read one picture once, hash and fully decode those bytes; the error instead when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return Verdict(None, exc, None)
    return Verdict(decode_problem(data), None, hashlib.sha256(data).hexdigest())


def _start_worker(parent: int) -> None:
    """Leave Ctrl-C to the parent, and (Linux) have the kernel end this worker when the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _DIE_WITH_PARENT is not None:
        _DIE_WITH_PARENT()
        if os.getppid() != parent:  # the parent died before the line above took effect
            os._exit(1)


def _context() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")


def reuse_picture_memory() -> None:
    """Have Pillow keep freed picture buffers for the next picture (unless `PILLOW_BLOCKS_MAX` says otherwise): by
    default each decode maps fresh pages, ~0.3 s of system time for 1,640 pictures. Decoding is unchanged."""
    if "PILLOW_BLOCKS_MAX" not in os.environ:
        Image.core.set_blocks_max(max(Image.core.get_blocks_max(), KEPT_PICTURE_BLOCKS))


def _each(function: Callable[[T], R], batch: list[T]) -> list[R]:
    """`function` of each item of one batch, in a worker."""
    return [function(item) for item in batch]


def on_cores(function: Callable[[T], R], items: Iterable[T], count: int, jobs: int, doing: str,
             meanwhile: Callable[[], object] | None = None) -> Iterator[R]:
    """`function` of each of the `count` items (each decodes a picture), yielded in order, on up to `jobs` worker
    processes (here when 1, or when there are too few items to share). Workers start on the first items while a lazy
    `items` still makes the rest; at most BATCHES_PER_WORKER batches per worker are out at a time (taking more items
    waits for the oldest batch), so a release of any size holds a bounded number of pictures in memory. `doing`
    names the work in the one line a dead worker gives. `meanwhile`: work of this process that needs no result,
    done once the last item is handed out, while the workers decode the batches still out (without workers: after
    the last item)."""
    reuse_picture_memory()  # before the workers fork: they inherit it
    workers = min(jobs, count // PICTURES_PER_WORKER)
    if workers <= 1:
        yield from map(function, items)
        if meanwhile is not None:
            meanwhile()
        return
    size = max(1, min(PICTURES_PER_BATCH, count // (workers * 8)))
    executor = ProcessPoolExecutor(workers, mp_context=_context(), initializer=_start_worker,
                                   initargs=(os.getpid(),))
    pending: deque[Future[list[R]]] = deque()
    left = iter(items)
    try:
        for batch in iter(lambda: list(itertools.islice(left, size)), []):
            if len(pending) == workers * BATCHES_PER_WORKER:
                yield from pending.popleft().result()
            pending.append(executor.submit(_each, function, batch))
        if meanwhile is not None:
            meanwhile()
        while pending:
            yield from pending.popleft().result()
    except BrokenProcessPool as exc:
        raise LevanteError(f"{doing}: a worker process died ({exc}); rerun with --jobs 1") from exc
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def decode_all(paths: Sequence[str | os.PathLike[str]], jobs: int) -> list[Verdict]:
    """The verdict of every picture in `paths`, in order, decoded on up to `jobs` processes."""
    return list(on_cores(verdict, paths, len(paths), jobs, "decoding the pictures"))
