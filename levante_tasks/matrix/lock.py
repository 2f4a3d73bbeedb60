"""Locks that keep concurrent matrix processes on one --out from racing (flock: the kernel drops a lock when its
holder dies, so kill -9 never leaves a stuck lock).

- `OUT/.matrix.lock`: a whole run holds it exclusively (it moves superseded cells and writes the end step), a
  `--shard`/`--cell` run holds it shared (shards run side by side). A run that finds it taken says once that it
  waits (naming the holder's pid) and waits for it, up to WAIT_SECONDS, then fails with one line.
- each cell folder itself, exclusively, while a process runs that cell: a second process on the same cell is
  refused with one line instead of running it twice.
Liveness is per host: flock over NFS depends on the mount; do not run one cell from two hosts at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from levante_tasks.errors import LevanteError, display_path, problem_text

LOCK_NAME = ".matrix.lock"
WAIT_SECONDS = float(os.environ.get("LEVANTE_MATRIX_LOCK_WAIT", "1800"))
POLL_SECONDS = 0.2


def _holder(fd: int) -> str:
    """The pid the last holder wrote into the lock file, or `unknown`."""
    text = os.pread(fd, 16, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


@contextlib.contextmanager
def matrix_lock(out: Path, shared: bool) -> Iterator[None]:
    """Hold OUT's matrix lock for the block: shared for a shard or single cell, exclusive for a whole run."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise LevanteError(f"{display_path(out)}: {problem_text(exc)} (cannot take the matrix lock)") from None
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            what = "a whole matrix run" if shared else "another matrix process"
            print(f"levante-tasks: {what} is using {display_path(out)} (pid {_holder(fd)}); waiting",
                  file=sys.stderr, flush=True)
            _wait(fd, mode, out)
        with contextlib.suppress(OSError):  # the pid only informs a waiter; a full disk must not stop us here
            os.pwrite(fd, f"{os.getpid():<15}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _wait(fd: int, mode: int, out: Path) -> None:
    """Poll for the lock until WAIT_SECONDS have passed."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
    raise LevanteError(f"{display_path(out)}: another matrix process (pid {_holder(fd)}) still holds it after "
                       f"{WAIT_SECONDS:g} s; try again later")


@contextlib.contextmanager
def cell_lock(cell_dir: Path, rel: str) -> Iterator[None]:
    """Hold the cell folder's lock (the folder is created if needed); refuse when another process holds it."""
    cell_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(cell_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LevanteError(f"{rel}: another matrix process is running this cell; wait for it, then rerun "
                               "with --resume") from None
        yield
    finally:
        os.close(fd)
