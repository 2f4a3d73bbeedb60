"""Where prepared data lives (docs/design.md §2) and which prepared version a run evaluates.

`<data_dir>/<version>/` holds one release version: `release/` (the mirror), `release.lock.json`, `croissant.json`,
`generated/` and `datasets/<internal_name>/{test.parquet,dataset.json}` (a translated locale's under
`datasets/locales/<code>/<internal_name>/`); `<data_dir>/default_version` names the version `prepare` built last.
Image paths inside datasets are relative to `<data_dir>/<version>/`.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from levante_tasks.errors import LevanteError
from levante_tasks.schema.locales import ENGLISH, Locale
from levante_tasks.textfile import read_optional_text

DATA_DIR_ENV = "LEVANTE_DATA_DIR"
VERSION_ENV = "LEVANTE_DATA_VERSION"
DEFAULT_VERSION_FILE = "default_version"
# in <data_dir>/<version>/
RELEASE_DIR = "release"  # the mirror of the release version
GENERATED_DIR = "generated"  # images the data layer draws
DATASETS_DIR = "datasets"  # one folder per task, and BUILD_FILE
LOCALES_DIR = "locales"  # datasets/locales/<code>/: one folder per task of a translated locale
# datasets/locales/<this>: the table the locales were built from, kept (locked) so a later prepare builds them again
KEPT_TRANSLATIONS_FILE = "item-bank-translations.csv"
RELEASE_LOCK_FILE = "release.lock.json"
CARD_FILE = "croissant.json"  # the version's Croissant data card (data.card), written by `prepare` from the lock
PREPARE_LOCK_FILE = ".prepare.lock"  # flock of a running `prepare`
BUILD_FILE = "build.json"  # datasets/build.json: the build that made datasets/
DATASET_FILE = "test.parquet"  # datasets/<internal_name>/test.parquet: the item rows
DATASET_INFO_FILE = "dataset.json"  # datasets/<internal_name>/dataset.json: schema.dataset
# in a release version folder <base>/<version>/ (and its mirror release/)
MANIFEST_FILE = "manifest.csv"
VISUAL_DIR = "visual"  # visual/<internal_name>/: the pictures
CORPUS_DIR = "corpus"  # corpus/<internal_name>/: item banks
TRANSLATIONS_FILE = "translations/item-bank-translations.csv"  # LEVANTE's translation table, when the release has it
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


def dataset_relpath(task: str, locale: Locale = ENGLISH) -> str:
    """`datasets/<internal_name>` (English), `datasets/locales/<code>/<internal_name>` (a translated locale): the
    folder of one task's dataset, relative to the version folder."""
    return f"{DATASETS_DIR}/{task}" if locale.is_source else f"{DATASETS_DIR}/{LOCALES_DIR}/{locale.code}/{task}"


def dataset_dir(version: str, task: str, root: PathArg = None, locale: Locale = ENGLISH) -> Path:
    """`<data_dir>/<version>/<dataset_relpath>/` holding test.parquet and dataset.json."""
    return version_dir(version, root) / dataset_relpath(task, locale)


def lock_path(version: str, root: PathArg = None) -> Path:
    """The lock file recording the sha256 and size of every release file."""
    return version_dir(version, root) / RELEASE_LOCK_FILE


def is_version_name(version: str) -> bool:
    """A version names one plain folder (no separators, not hidden)."""
    return bool(version) and not version.startswith(".") and not any(c in version for c in "/\\\0\n\r")


def prepared_version(root: PathArg = None) -> str | None:
    """The prepared version to evaluate: $LEVANTE_DATA_VERSION, else `<data_dir>/default_version`; None: neither.

    Raises LevanteError (one line naming the file and `levante-tasks prepare`) when the file is unreadable or
    either is not a folder name.
    """
    env = os.environ.get(VERSION_ENV, "").strip()
    if env:
        if not is_version_name(env):
            raise LevanteError(f"{VERSION_ENV}={env!r}: not a version folder name")
        return env
    try:
        text = read_optional_text(data_dir(root) / DEFAULT_VERSION_FILE, DEFAULT_VERSION_FILE)
    except LevanteError as exc:
        raise LevanteError(f"{exc} (in the data dir): {PREPARE_HINT}") from None
    version = (text or "").strip()
    if version and not is_version_name(version):
        raise LevanteError(f"{DEFAULT_VERSION_FILE}: {version[:40]!r} is not a version folder name: {PREPARE_HINT}")
    return version or None


def data_version() -> str:
    """prepared_version(), or LevanteError (one line naming `levante-tasks prepare`) when there is none."""
    version = prepared_version()
    if version:
        return version
    raise LevanteError(f"no prepared LEVANTE data (no {VERSION_ENV}, no {DEFAULT_VERSION_FILE}): {PREPARE_HINT}")
