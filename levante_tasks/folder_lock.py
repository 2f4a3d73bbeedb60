"""The one file-lock helper: flock on a lock file in a folder (`prepare`'s version lock, the matrix's --out lock)
and on a folder itself (a matrix cell). The kernel drops a lock when its holder dies, so kill -9 never leaves a
stuck lock; liveness is per host (flock over NFS depends on the mount).

`hold` says once that it waits (naming the folder, what holds it and its pid), waits up to `wait_seconds`, then
fails with one line; with `wait_seconds=0` it refuses at once (`Busy`). Each holder records its pid and what it is
(`role`) in the lock file for those messages. `hold_folder` never waits: a folder already held is refused
(FolderHeld), which a caller may also take as "another process is doing this".
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

WAIT_SECONDS = 1800.0
POLL_SECONDS = 0.2
_RECORD_WIDTH = 128  # a holder's record is written padded, so a shorter one never leaves part of a longer one behind


class Busy(LevanteError):
    """The lock is held and the caller would not wait; `holder` names what holds it and its pid."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


def _holder(fd: int, who: str) -> tuple[str, str]:
    """(what the (last) holder recorded it is, its pid) from the lock file: `who` (the caller's guess) when it
    recorded no role, `unknown` for a pid it did not record."""
    pid, _, role = os.pread(fd, _RECORD_WIDTH, 0).decode("utf-8", "replace").strip().partition(" ")
    return role.strip() or who, pid if pid.isdigit() else "unknown"


def _named(holder: str, pid: str) -> str:
    """A holder with its pid: `a whole matrix run (pid 12)`, `the end step (--report-only, pid 12)`."""
    return f"{holder[:-1]}, pid {pid})" if holder.endswith(")") else f"{holder} (pid {pid})"


def _open(path: Path) -> tuple[int, bool]:
    """The lock file opened for writing, or read-only when the folder is read-only (flock works on both)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666), True
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not path.is_file():
            raise
        return os.open(path, os.O_RDONLY), False


def _take(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _acquire(fd: int, mode: int, where: str, what: str, who: str, wait_seconds: float) -> None:
    """Take the lock; when it is held, refuse at once (`wait_seconds` 0), or say so once and poll until
    `wait_seconds` have passed."""
    if _take(fd, mode):
        return
    holder, pid = _holder(fd, who)
    if wait_seconds <= 0:
        raise Busy(f"{where}: {_named(holder, pid)} holds {what}; try again later", _named(holder, pid))
    print(f"levante-tasks: {holder} is using {where} (pid {pid}); waiting", file=sys.stderr, flush=True)
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        if _take(fd, mode):
            return
    holder, pid = _holder(fd, who)
    raise LevanteError(f"{where}: {_named(holder, pid)} still holds it after {wait_seconds:g} s; try again later")


@contextlib.contextmanager
def hold(folder: Path, name: str, *, who: str, what: str, shared: bool = False,
         wait_seconds: float | None = None, role: str = "") -> Iterator[None]:
    """Hold the lock file `folder/name` (both created if needed) for the block: exclusive, or `shared`.

    `who` names a holder that blocks us in messages when it recorded no role (`another prepare`), `what` the lock
    (`the prepare lock`), `role` what we are for others' messages (`the end step`); `wait_seconds` defaults to
    WAIT_SECONDS (0: Busy at once). An exclusive holder leaves the file empty when it is done.
    """
    where = display_path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, writable = _open(folder / name)
    except OSError as exc:
        raise LevanteError(f"{where}: {problem_text(exc)} (cannot take {what})") from None
    try:
        _acquire(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, where, what, who,
                 WAIT_SECONDS if wait_seconds is None else wait_seconds)
        if writable:
            record = f"{os.getpid()} {role}"[:_RECORD_WIDTH - 1].ljust(_RECORD_WIDTH - 1) + "\n"
            with contextlib.suppress(OSError):  # the record only informs a waiter; a full disk must not stop us here
                os.pwrite(fd, record.encode(), 0)
        try:
            yield
        finally:
            if writable and not shared:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
    finally:
        os.close(fd)


class FolderHeld(LevanteError):
    """hold_folder's refusal: another process holds the folder."""


@contextlib.contextmanager
def hold_folder(folder: Path) -> Iterator[None]:
    """Hold `folder` itself (created if needed) exclusively for the block; FolderHeld when another process holds
    it (no waiting)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if not _take(fd, fcntl.LOCK_EX):
            raise FolderHeld(f"{display_path(folder)}: another process holds it")
        yield
    finally:
        os.close(fd)
