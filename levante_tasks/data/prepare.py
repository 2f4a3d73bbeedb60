"""`prepare`: mirror a release version, validate it, and build the per-task datasets (no work when current)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from levante_tasks.atomic import write_text
from levante_tasks.data import paths
from levante_tasks.data.build import BUILDER_VERSION, SCHEMA_VERSION, TaskSummary, build_datasets
from levante_tasks.data.mirror import mirror_release, read_lock
from levante_tasks.data.sources import open_source, resolve_version
from levante_tasks.errors import LevanteError

DEFAULT_VERSION_FILE = "default_version"


@dataclass
class PrepareResult:
    """What one `prepare` did: the version, how many files it fetched, whether it rebuilt, and the tasks."""

    version: str
    fetched: int
    rebuilt: bool
    tasks: list[TaskSummary]


def build_key(lock: dict, strict: bool) -> str:
    """Identity of a build: the release files' hashes, the builder and schema versions, and the mode."""
    payload = {"files": lock["files"], "builder": BUILDER_VERSION, "schema": SCHEMA_VERSION, "strict": strict}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _current_build(version_root: Path) -> dict | None:
    try:
        return json.loads((version_root / "datasets" / "build.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def prepare(release: str, version: str | None, data_dir: str | None, strict: bool, progress: bool = True
            ) -> PrepareResult:
    """Mirror, validate and build; returns what was done. Raises LevanteError with one line per problem."""
    source = open_source(release)
    try:
        resolved = resolve_version(source, version)
    except LevanteError:
        if version and read_lock(paths.lock_path(version, data_dir))["files"]:
            resolved = version  # offline: the locked local mirror of this version is complete enough to rebuild
            source = None
        else:
            raise
    version_root = paths.version_dir(resolved, data_dir)
    if source is None:
        lock, fetched = read_lock(paths.lock_path(resolved, data_dir)), 0
    else:
        lock, fetched = mirror_release(source, resolved, version_root, progress=progress)
    key = build_key(lock, strict)
    current = _current_build(version_root)
    if current and current.get("build_key") == key:
        tasks = [TaskSummary(task, info["n_items"], info["fingerprint"], info["excluded"])
                 for task, info in sorted(current["tasks"].items())]
        rebuilt = False
    else:
        tasks = build_datasets(version_root, resolved, strict, key)
        rebuilt = True
    write_text(paths.data_dir(data_dir) / DEFAULT_VERSION_FILE, resolved + "\n")
    return PrepareResult(resolved, fetched, rebuilt, tasks)


def default_version(data_dir: str | None = None) -> str:
    """$LEVANTE_DATA_VERSION, else the version the last `prepare` wrote into `<data_dir>/default_version`."""
    env = os.environ.get(paths.VERSION_ENV)
    if env:
        return env
    marker = paths.data_dir(data_dir) / DEFAULT_VERSION_FILE
    if marker.is_file():
        return marker.read_text(encoding="utf-8").strip()
    raise LevanteError("no prepared LEVANTE data: run `levante-tasks prepare --release BASE --version V` first")
