"""Where prepared data lives (docs/design.md §2) and which prepared version a run evaluates.

`<data_dir>/<version>/` holds one release version: `release/` (the mirror), `release.lock.json`,
`generated/` and `datasets/<internal_name>/{test.parquet,dataset.json}`; `<data_dir>/default_version` names
the version `prepare` built last. Image paths inside datasets are relative to `<data_dir>/<version>/`.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from levante_tasks.errors import LevanteError, problem_text

DATA_DIR_ENV = "LEVANTE_DATA_DIR"
VERSION_ENV = "LEVANTE_DATA_VERSION"
DEFAULT_VERSION_FILE = "default_version"
DATASET_FILE = "test.parquet"
PREPARE_HINT = "run `levante-tasks prepare --release BASE --version VERSION` first"

PathArg = str | os.PathLike[str] | None


def data_dir(override: PathArg = None) -> Path:
    """The data dir: `override`, else $LEVANTE_DATA_DIR, else the user cache dir."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("levante-tasks"))


def version_dir(version: str, root: PathArg = None) -> Path:
    """`<data_dir>/<version>/`: the release mirror, lock file, generated images and datasets of one version."""
    return data_dir(root) / version


def dataset_dir(version: str, task: str, root: PathArg = None) -> Path:
    """`<data_dir>/<version>/datasets/<internal_name>/` holding test.parquet and dataset.json."""
    return version_dir(version, root) / "datasets" / task


def lock_path(version: str, root: PathArg = None) -> Path:
    """The lock file recording the sha256 and size of every release file."""
    return version_dir(version, root) / "release.lock.json"


def is_version_name(version: str) -> bool:
    """A version names one plain folder (no separators, not hidden)."""
    return bool(version) and not version.startswith(".") and not any(c in version for c in "/\\\0\n\r")


def data_version() -> str:
    """The prepared version to evaluate: $LEVANTE_DATA_VERSION, else `<data_dir>/default_version`.

    Raises LevanteError (one line naming the file and `levante-tasks prepare`) when there is none or it is
    unreadable or not a folder name.
    """
    env = os.environ.get(VERSION_ENV, "").strip()
    if env:
        if not is_version_name(env):
            raise LevanteError(f"{VERSION_ENV}={env!r}: not a version folder name")
        return env
    try:
        version = (data_dir() / DEFAULT_VERSION_FILE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        version = ""
    except OSError as exc:
        problem = problem_text(exc)
        raise LevanteError(f"{DEFAULT_VERSION_FILE}: {problem} (in the data dir): {PREPARE_HINT}") from None
    except UnicodeDecodeError:
        raise LevanteError(f"{DEFAULT_VERSION_FILE}: not UTF-8 text (in the data dir): {PREPARE_HINT}") from None
    if version and not is_version_name(version):
        raise LevanteError(f"{DEFAULT_VERSION_FILE}: {version[:40]!r} is not a version folder name: {PREPARE_HINT}")
    if version:
        return version
    raise LevanteError(f"no prepared LEVANTE data (no {VERSION_ENV}, no {DEFAULT_VERSION_FILE}): {PREPARE_HINT}")
