"""Session fixtures built once per test run, even when pytest-xdist runs the suite on several workers.

Each worker is its own pytest session, so a plain `scope="session"` fixture would be built once per worker. Here
the first worker to ask builds the folder (under a file lock) in a place every worker of the run sees, and the
others wait for it and reuse it. A build that failed half-way leaves no `.done` mark, so the next asker starts over.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def run_temp(factory: pytest.TempPathFactory) -> Path:
    """The temp folder of this whole run: shared by its xdist workers (their base temps, `popen-<worker>`, sit in
    it), else this session's own base temp (never its parent: that one holds other runs, concurrent ones included;
    a pytest that a worker's test starts inherits $PYTEST_XDIST_WORKER but has a base temp of its own)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") and base.name.startswith("popen-") else base


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder `<run temp>/built-once/<name>`, filled by `build(folder)` by the first worker that asks; the
    callers must only read it (every worker of the run gets the same folder)."""
    root = run_temp(factory) / "built-once"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
