"""Where prepared data lives: one folder per release version under the data dir (see docs/design.md §2)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DATA_DIR_ENV = "LEVANTE_DATA_DIR"
VERSION_ENV = "LEVANTE_DATA_VERSION"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The data dir: `override`, else $LEVANTE_DATA_DIR, else the user cache dir."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("levante-tasks"))


def version_dir(version: str, root: str | os.PathLike[str] | None = None) -> Path:
    """`<data_dir>/<version>/`: the release mirror, lock file, generated images and datasets of one version."""
    return data_dir(root) / version


def release_dir(version: str, root: str | os.PathLike[str] | None = None) -> Path:
    """The local mirror of `<base>/<version>/`."""
    return version_dir(version, root) / "release"


def dataset_dir(version: str, task: str, root: str | os.PathLike[str] | None = None) -> Path:
    """`<data_dir>/<version>/datasets/<internal_name>/` holding test.parquet and dataset.json."""
    return version_dir(version, root) / "datasets" / task


def lock_path(version: str, root: str | os.PathLike[str] | None = None) -> Path:
    """The lock file recording the sha256 and size of every release file."""
    return version_dir(version, root) / "release.lock.json"
