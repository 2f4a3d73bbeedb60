"""Fixtures shared by the inspect_ai task tests: a fixture data dir (one per test run) and the env pointing at it."""

from __future__ import annotations

import pytest
from built_once import built_once

from levante_tasks.testing.fixture_data import write_fixture


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    """The fixture data, written once per test run (shared by the xdist workers); tests only read it."""
    return built_once(tmp_path_factory, "inspect-fixture-data", write_fixture)


@pytest.fixture()
def fixture_env(data_dir, monkeypatch):
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
