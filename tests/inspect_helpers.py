"""Fixtures shared by the inspect_ai task tests: a fixture data dir (per test module) and the env pointing at it."""

from __future__ import annotations

import pytest

from levante_tasks.testing.fixture_data import write_fixture


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("levante-data")
    write_fixture(root)
    return root


@pytest.fixture()
def fixture_env(data_dir, monkeypatch):
    monkeypatch.setenv("LEVANTE_DATA_DIR", str(data_dir))
    monkeypatch.delenv("LEVANTE_DATA_VERSION", raising=False)
