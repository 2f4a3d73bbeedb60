"""Shared fixtures: where the read-only LEVANTE sample lives (`../shared` next to the repo, or $LEVANTE_SHARED)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from shared_paths import shared_dir

from levante_tasks.schema import tasks as catalogue

# The suite never touches the network: hub lookups and dataset telemetry are off before anything imports them.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


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


@pytest.fixture
def vocab_extended(monkeypatch: pytest.MonkeyPatch) -> catalogue.TaskInfo:
    """A made-up catalogue row named like vocab plus a word (`levante_vocab_extended`), for one test."""
    row = catalogue.TaskInfo("vocab-extended", "vocabx", "levante_vocab_extended", image_options=True)
    monkeypatch.setattr(catalogue, "TASKS", (*catalogue.TASKS, row))
    monkeypatch.setattr(catalogue, "BY_NAME", {**catalogue.BY_NAME, row.name: row})
    return row
