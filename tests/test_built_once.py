"""tests/built_once.py: a session fixture's folder is built by one xdist worker of the run and reused by the others."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from built_once import built_once, run_temp


class Factory:
    """What built_once reads of pytest's TempPathFactory: the base temp of one worker."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def test_two_workers_asking_at_once_build_one_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    workers = [Factory(tmp_path / f"popen-gw{n}") for n in range(2)]
    builds, found = [], []

    def build(folder: Path) -> None:
        builds.append(folder)
        time.sleep(0.3)  # the other worker asks meanwhile and must wait, not build
        (folder / "model.bin").write_bytes(b"weights")

    threads = [threading.Thread(target=lambda f=f: found.append(built_once(f, "model", build))) for f in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == [tmp_path / "built-once" / "model"]
    assert found == builds * 2 and (found[0] / "model.bin").read_bytes() == b"weights"


def test_a_failed_build_is_started_over_by_the_next_asker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    factory = Factory(tmp_path)

    def broken(folder: Path) -> None:
        (folder / "half").write_text("half")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        built_once(factory, "data", broken)
    folder = built_once(factory, "data", lambda folder: (folder / "whole").write_text("whole"))
    assert sorted(p.name for p in folder.iterdir()) == ["whole"]
    assert built_once(factory, "data", broken) == folder  # built: not built again


def test_without_xdist_the_run_temp_is_the_session_base_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert run_temp(Factory(tmp_path)) == tmp_path  # its parent holds other runs of pytest
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert run_temp(Factory(tmp_path / "popen-gw1")) == tmp_path
    # a pytest started by a worker's test (tests/test_add_task.py) inherits the variable, not the worker's folder
    assert run_temp(Factory(tmp_path / "pytest-7")) == tmp_path / "pytest-7"
