"""Shared fixtures: where the read-only LEVANTE sample lives (`../shared` next to the repo, or $LEVANTE_SHARED)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from built_once import built_once
from PIL import Image
from shared_paths import shared_dir

from levante_tasks.schema import tasks as catalogue
from levante_tasks.testing import fork_stream

# The suite never touches the network: hub lookups and dataset telemetry are off before anything imports them.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One compute thread per process (torch's intra-op pool, OpenMP, BLAS), inherited by every process a test starts:
# `make test` runs 2 workers on 2 cores, so a pool of one thread per core in each would put twice as many threads as
# cores, and OpenMP's idle threads spin (CPU spent waiting, no result changes). Set before anything imports torch.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")


@pytest.fixture(scope="session", autouse=True)
def fork_stream_dispatcher() -> None:
    """The dispatcher that the matrix tests' cells (`lmms_eval_module: levante_tasks.testing.forked_doubles`) reach
    through $LEVANTE_FORK_STREAM: one per test process, its zygotes started on first use (fork_stream)."""
    fork_stream.start()


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """kind -> its tiny random-init checkpoint folder (tests/tiny_checkpoints.py), built once per test run on first
    use and shared by the xdist workers: read only. Imported here, not at the top: it imports torch, which a worker
    that runs no model never needs."""
    from tiny_checkpoints import tiny_checkpoint

    return partial(tiny_checkpoint, tmp_path_factory)


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared folder; tests that need the real sample skip with a reason when it is absent."""
    found = shared_dir()
    if found is None:
        pytest.skip("../shared/levante-sample is not present next to this checkout (set LEVANTE_SHARED)")
    return found


@pytest.fixture(scope="session")
def sample_base(shared: Path) -> Path:
    """Release base holding the real `2026-03-24/` version."""
    return shared / "levante-sample"


REAL_VERSION = "2026-03-24"
REAL_TABLE = "item_bank_translations.csv"  # the 1cb5bfc version: real de and es-CO text (translations/README.md)


@pytest.fixture(scope="session")
def real_sample_data(sample_base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real sample with labelled stand-in pictures, prepared once per test run (lenient; one build shared by
    every xdist worker: built_once) with LEVANTE's real translation table read in place (CC-BY-NC: never copied
    into the repository): English and every locale."""

    def build(root: Path) -> None:
        from levante_tasks.data.prepare import prepare
        from levante_tasks.data.standins import TAG, write_standin_release

        base = root / "standin-release"
        made = write_standin_release(sample_base, REAL_VERSION, base)
        assert not any(rel.startswith("visual/vocab/") for rel in made)  # vocab keeps its real pictures
        with Image.open(base / REAL_VERSION / made[0]) as image:
            assert image.text["Source"] == TAG
        table = sample_base / "translations" / REAL_TABLE
        prepare(str(base), REAL_VERSION, str(root / "standin-data"), strict=False, progress=False,
                translations=str(table))

    return built_once(tmp_path_factory, "real-sample-data", build) / "standin-data"


@pytest.fixture
def vocab_extended(monkeypatch: pytest.MonkeyPatch) -> catalogue.TaskInfo:
    """A made-up catalogue row named like vocab plus a word (`levante_vocab_extended`), for one test."""
    row = catalogue.TaskInfo("vocab-extended", "vocabx", "levante_vocab_extended", image_options=True)
    monkeypatch.setattr(catalogue, "TASKS", (*catalogue.TASKS, row))
    monkeypatch.setattr(catalogue, "BY_NAME", {**catalogue.BY_NAME, row.name: row})
    return row

