"""One `prepare` at a time per version folder: an flock on `<data_dir>/<version>/.prepare.lock`.

A second `prepare` of the same version says once that it waits (naming the holder's pid) and then waits for
the first to finish, up to WAIT_SECONDS, after which it fails with one line. The kernel drops the lock when
its holder dies, so a kill -9 never leaves a stuck lock. The file stays (empty between runs).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from levante_tasks.errors import LevanteError, display_path, problem_text

LOCK_NAME = ".prepare.lock"
WAIT_SECONDS = 1800.0
POLL_SECONDS = 0.2


def _holder(fd: int) -> str:
    """The pid the current holder wrote into the lock file, or `unknown`."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return text if text.isdigit() else "unknown"


def _acquire(fd: int, folder: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pid = _holder(fd)
    where = display_path(folder)
    print(f"levante-tasks: another prepare is running on {where} (pid {pid}); waiting", file=sys.stderr, flush=True)
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue
    raise LevanteError(f"another prepare is still running on {where} (pid {_holder(fd)}) after {WAIT_SECONDS:g} s; "
                       "try again later")


def _open(path: Path) -> tuple[int, bool]:
    """The lock file opened for writing, or read-only when the folder is read-only (flock works on both)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666), True
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not path.is_file():
            raise
        return os.open(path, os.O_RDONLY), False


@contextlib.contextmanager
def hold(folder: Path) -> Iterator[None]:
    """Hold the prepare lock of `folder` (created if needed) for the block."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, writable = _open(folder / LOCK_NAME)
    except OSError as exc:
        raise LevanteError(f"{display_path(folder)}: {problem_text(exc)} (cannot take the prepare lock)") from exc
    try:
        _acquire(fd, folder)
        if writable:
            with contextlib.suppress(OSError):  # the pid only informs a waiter; a full disk must not stop us here
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            if writable:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
    finally:
        os.close(fd)
