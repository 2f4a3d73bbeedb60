"""Fault injection for reliability tests: the CLI as its own process, kill -9, a full disk, capabilities dropped.

As root, chmod alone does not make a folder unreadable or read-only (CAP_DAC_OVERRIDE): `run_cli(...,
drop_dac=True)` runs the command with those capabilities removed from its bounding set, as an ordinary user
would be. `small_tmpfs` mounts a tiny tmpfs so writes fail with ENOSPC. Both need root; CI runs as root.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from levante_tasks.temp_names import TEMP_NAME
from levante_tasks.testing import lmms_fork

DROP_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def cli_command(args: Sequence[str], drop_dac: bool = False) -> list[str]:
    """The argv that runs `levante-tasks ARGS` with this interpreter (optionally without DAC capabilities)."""
    command = [sys.executable, "-m", "levante_tasks", *map(str, args)]
    return [*DROP_DAC, *command] if drop_dac else command


def run_cli(args: Sequence[str], *, drop_dac: bool = False, env: dict[str, str] | None = None,
            cwd: str | os.PathLike[str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `levante-tasks ARGS` as its own process; returns the completed process (text stdout/stderr).

    The process is forked from a server that imported the commands' libraries once (`lmms_fork`, entry
    `levante_tasks`: the same status, streams and files as `python -m levante_tasks ARGS`, ~1 s of CPU less per run);
    with `drop_dac` it is a new `setpriv` process, as the capability drop needs."""
    if drop_dac and not IS_ROOT:
        pytest.skip("dropping capabilities needs root (CI runs as root)")
    full_env = {**os.environ, **(env or {})}
    if drop_dac:
        return subprocess.run(cli_command(args, drop_dac), capture_output=True, text=True, env=full_env, cwd=cwd,
                              timeout=timeout, check=False)
    return lmms_fork.run_cli([str(a) for a in args], cwd=cwd or os.getcwd(), env=full_env, timeout=timeout,
                             entry="levante_tasks")


def kill9_when(args: Sequence[str], ready: Callable[[], bool], *, env: dict[str, str] | None = None,
               timeout: float = 120, poll: float = 0.005) -> int:
    """Start `levante-tasks ARGS`, SIGKILL it as soon as `ready()` is true; return its exit status.

    Fails the test if the command finished before `ready()` became true (the fault was never injected).
    """
    full_env = {**os.environ, **(env or {})}
    process = subprocess.Popen(cli_command(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=full_env)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if ready():
                process.send_signal(signal.SIGKILL)
                return process.wait()
            if process.poll() is not None:
                pytest.fail(f"command exited ({process.returncode}) before the kill point was reached")
            time.sleep(poll)
        pytest.fail("kill point not reached in time")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    raise AssertionError("unreachable")


@contextlib.contextmanager
def small_tmpfs(size: str = "2m") -> Iterator[Path]:
    """A freshly mounted tmpfs of `size` (writes beyond it fail with ENOSPC); unmounted afterwards."""
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount_point = Path(tempfile.mkdtemp(prefix="levante-tmpfs-"))
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        mount_point.rmdir()
        pytest.fail(f"could not mount a tmpfs: {result.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
        mount_point.rmdir()


def fill_disk(folder: Path, keep_free: int = 0) -> None:
    """Fill the file system holding `folder` until at most `keep_free` bytes are left."""
    filler = folder / ".filler"
    chunk = b"\0" * (64 * 1024)
    with open(filler, "wb") as handle:
        try:
            while True:
                stat = os.statvfs(folder)
                free = stat.f_bavail * stat.f_frsize
                if free <= keep_free:
                    break
                handle.write(chunk[: max(1, min(len(chunk), free - keep_free))])
                handle.flush()
        except OSError:
            pass


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes), to prove nothing good was lost or changed."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def one_error_line(stderr: str) -> str:
    """The single `levante-tasks: error:` line of a failed command; fails the test on a traceback or noise."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    errors = [line for line in lines if line.startswith("levante-tasks: error:")]
    assert errors, f"no error line in stderr: {stderr!r}"
    hidden = [part for part in re.split(r"[\s/:'\"()]+", errors[0]) if TEMP_NAME.match(part)]
    assert not hidden, f"the error names a hidden temp or staging path, not the output the user gave: {errors[0]}"
    return errors[0]
