"""Mirror one release version into the data dir and record a sha256 per file in `release.lock.json`.

Files already present with the locked size are not fetched again; every new file is written to a temp name
and renamed only when complete, so an interrupted run leaves no partial file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tqdm import tqdm

from levante_tasks.atomic import atomic_path, write_json
from levante_tasks.data.sources import HttpSource, LocalSource, copy_file_with_retries

LOCK_SCHEMA = 1


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_lock(lock_file: Path) -> dict[str, Any]:
    """The lock file's content, or an empty lock when absent or unreadable (then everything is re-checked)."""
    try:
        lock = json.loads(lock_file.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {"files": {}}
    return lock if isinstance(lock.get("files"), dict) else {"files": {}}


def mirror_release(source: LocalSource | HttpSource, version: str, version_root: Path, progress: bool = True
                   ) -> tuple[dict[str, Any], int]:
    """Bring `<version_root>/release/` in line with the source; return (lock, number of files fetched)."""
    release = version_root / "release"
    lock_file = version_root / "release.lock.json"
    old = read_lock(lock_file)["files"]
    remote_files = source.files(version)
    files: dict[str, dict[str, Any]] = {}
    todo = []
    for remote in remote_files:
        local = release / remote.relpath
        if not (local.is_file() and local.stat().st_size == remote.size):
            todo.append(remote)
        elif old.get(remote.relpath, {}).get("size") == remote.size:
            files[remote.relpath] = old[remote.relpath]
        else:  # complete (renamed into place) but unlocked: an earlier run was interrupted after it
            files[remote.relpath] = {"sha256": sha256_file(local), "size": remote.size}
    with tqdm(total=sum(f.size for f in todo), unit="B", unit_scale=True, desc=f"fetch {version}",
              disable=not progress or not todo, leave=False) as bar:
        for remote in todo:
            target = release / remote.relpath
            with atomic_path(target) as tmp:
                copy_file_with_retries(source, version, remote, tmp, bar.update)
                digest = sha256_file(tmp)
            files[remote.relpath] = {"sha256": digest, "size": remote.size}
    for stale in sorted(set(old) - {f.relpath for f in remote_files}):
        (release / stale).unlink(missing_ok=True)
    lock = {"schema": LOCK_SCHEMA, "version": version, "source": source.label, "files": dict(sorted(files.items()))}
    if lock != read_lock(lock_file):
        write_json(lock_file, lock)
    return lock, len(todo)
