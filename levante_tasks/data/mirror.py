"""Compare a release source with the local mirror and stage the new mirror next to it, never touching the old.

`release.lock.json` records, per release file, its sha256, size and the mirror copy's mtime_ns (plus the
source's change stamp), so an unchanged file costs one `stat` and a changed one is re-hashed; `verify`
re-hashes everything. Files to fetch are downloaded into `<version>/.fetch/` (each renamed into place only
when complete, so an interrupted run resumes with what is missing); the new mirror is then assembled in a
staging folder from hard links to the current mirror and the fetched files, for the caller to validate and
swap in.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levante_tasks.atomic import atomic_path, make_staging_dir, temp_sibling
from levante_tasks.data.decoding import Verdict, on_cores
from levante_tasks.data.sources import (
    HttpSource,
    LocalSource,
    RemoteFile,
    check_relpath,
    copy_file_with_retries,
)
from levante_tasks.data.visuals import IMAGE_SUFFIXES, decode_problem
from levante_tasks.errors import LevanteError
from levante_tasks.filehash import sha256_file
from levante_tasks.schema import layout

LOCK_SCHEMA = 2
FETCH_DIR = ".fetch"
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP, errno.ENOTSUP}


def read_lock(lock_file: Path) -> dict[str, Any]:
    """The lock file's content, or an empty lock when absent or unreadable (then everything is re-checked)."""
    try:
        lock = json.loads(lock_file.read_text(encoding="utf-8"))
    except (FileNotFoundError, UnicodeDecodeError, json.JSONDecodeError):
        return {"files": {}}
    return lock if isinstance(lock, dict) and isinstance(lock.get("files"), dict) else {"files": {}}


def file_entry(path: Path, sha256: str) -> dict[str, Any]:
    """A lock entry for a file whose content hashes to `sha256`: the hash plus the stat that caches it."""
    info = path.stat()
    return {"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def scan_files(root: Path) -> dict[str, os.stat_result | None]:
    """Every non-hidden entry below `root` (relpath -> lstat, None for anything but a plain file); raises on
    an unreadable folder instead of skipping it. String paths and scandir: this runs on every `prepare`."""
    found: dict[str, os.stat_result | None] = {}
    if not root.is_dir():
        return found
    pending = [(os.fspath(root), "")]
    while pending:
        folder, prefix = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, rel + "/"))
                    continue
                info = entry.stat(follow_symlinks=False)
                found[rel] = info if stat.S_ISREG(info.st_mode) else None
    return found


def intact(path: str | os.PathLike[str], info: os.stat_result | None, entry: dict[str, Any], verify: bool) -> bool:
    """Whether a local file still holds the content `entry` records: same size and mtime (or same hash)."""
    if info is None or info.st_size != entry.get("size"):
        return False
    if not verify and info.st_mtime_ns == entry.get("mtime_ns"):
        return True
    return sha256_file(path) == entry.get("sha256")


@dataclass
class MirrorPlan:
    """What it takes to bring the mirror in line with the source.

    `files`: lock entries of the listed files that the mirror holds intact (stat cache refreshed);
    `fetch`: listed files to download; `changed`: the mirror tree differs from the listing.
    """

    files: dict[str, dict[str, Any]]
    fetch: list[RemoteFile]
    changed: bool


def listing_from_lock(locked: dict[str, dict[str, Any]]) -> list[RemoteFile]:
    """The release as the lock recorded it: what an offline run checks the mirror against."""
    return [RemoteFile(rel, int(entry.get("size", -1)), entry.get("source_stamp"))
            for rel, entry in sorted(locked.items())]


def _source_unchanged(source: LocalSource | HttpSource | None, version: str, remote: RemoteFile,
                      entry: dict[str, Any], verify: bool) -> bool:
    """Whether the source still holds the content the lock records for `remote` (re-hashing a local file
    whose stamp moved, or every local file with `verify`)."""
    if entry.get("size") != remote.size or "sha256" not in entry:
        return False
    local = isinstance(source, LocalSource)
    if local and verify:
        return source.sha256(version, remote.relpath) == entry["sha256"]
    if remote.stamp is None or entry.get("source_stamp") == remote.stamp:
        return True
    if local:
        return source.sha256(version, remote.relpath) == entry["sha256"]
    return "source_stamp" not in entry  # a lock from before stamps: trust the size once, record the stamp


def plan_mirror(source: LocalSource | HttpSource | None, version: str, release: Path, listing: list[RemoteFile],
                locked: dict[str, dict[str, Any]], verify: bool) -> MirrorPlan:
    """Compare the listing with the lock and the mirror on disk (`source` None: offline, the lock is the
    listing). Reads only; hashes a file only when its stat moved, or all with `verify`."""
    for remote in listing:
        check_relpath(remote.relpath)
    if layout.MANIFEST_FILE not in {remote.relpath for remote in listing}:
        raise LevanteError(f"{version}/{layout.MANIFEST_FILE}: missing from the release")
    present = scan_files(release)
    release_text = os.fspath(release)
    files: dict[str, dict[str, Any]] = {}
    fetch: list[RemoteFile] = []
    for remote in listing:
        entry = locked.get(remote.relpath)
        if (entry is not None and _source_unchanged(source, version, remote, entry, verify)
                and intact(os.path.join(release_text, remote.relpath), present.get(remote.relpath), entry, verify)):
            info = present[remote.relpath]
            files[remote.relpath] = {"sha256": entry["sha256"], "size": info.st_size, "mtime_ns": info.st_mtime_ns,
                                     **({"source_stamp": remote.stamp} if remote.stamp else {})}
        else:
            fetch.append(remote)
    changed = bool(fetch) or set(present) != {remote.relpath for remote in listing}
    return MirrorPlan(files, fetch, changed)


def _cache_name(remote: RemoteFile) -> str:
    """Name of a fetched file in `.fetch/`: changes with the path, size or stamp, so a stale copy is never reused."""
    return hashlib.sha256(f"{remote.relpath}\0{remote.size}\0{remote.stamp}".encode()).hexdigest()[:40]


@dataclass
class Fetched:
    """The files `fetch_files` brought into `.fetch/` (relpath -> file), the sha256 of those it copied in this run,
    hashed from the bytes as they were written (a file an interrupted run left is hashed when staged), and the decode
    verdicts of the pictures among them, taken from those same bytes (data.decoding)."""

    paths: dict[str, Path]
    sha256: dict[str, str]
    verdicts: dict[str, Verdict] = field(default_factory=dict)


def is_picture(relpath: str) -> bool:
    """Whether a release file is a picture a build may decode (under `visual/`, an image suffix)."""
    return relpath.startswith(f"{layout.VISUAL_DIR}/") and os.path.splitext(relpath)[1].lower() in IMAGE_SUFFIXES


def _copy_local(source: LocalSource, version: str, remote: RemoteFile, path: Path) -> tuple[str, bytes | None]:
    """Copy one file of a local release to its `.fetch/` path (a temp name renamed when whole): the sha256 of the
    bytes written, and for a picture those bytes (None when the copy came out short, the file being changed: the
    retrying copy redoes it, and the build decodes the picture instead)."""
    digest = hashlib.sha256()
    picture: list[bytes] | None = [] if is_picture(remote.relpath) else None
    written = 0

    def take(chunk: bytes) -> None:
        nonlocal written
        written += len(chunk)
        digest.update(chunk)
        if picture is not None:
            picture.append(chunk)

    tmp = temp_sibling(path)
    try:
        source.copy(version, remote.relpath, tmp, take)
        if written == remote.size:
            sha256, data = digest.hexdigest(), None if picture is None else b"".join(picture)
        else:
            sha256, data = copy_file_with_retries(source, version, remote, tmp, lambda _: None), None
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return sha256, data


def _verdict_of(copied: tuple[bytes, str]) -> Verdict:
    """The decode verdict of a picture's copied bytes (and their sha256)."""
    data, sha256 = copied
    return Verdict(decode_problem(data), None, sha256)


@contextlib.contextmanager
def _progress(total: int, version: str, show: bool) -> Iterator[Callable[[int], object]]:
    """A byte counter for the fetch: a tqdm bar (shown on a terminal) when `show`, else nothing (tqdm is imported
    only then: ~0.05 s of start-up)."""
    if not show:
        yield lambda _: None
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, desc=f"fetch {version}", disable=None, leave=False) as bar:
        yield bar.update


def fetch_files(source: LocalSource | HttpSource, version: str, version_root: Path, todo: list[RemoteFile],
                progress: bool, jobs: int = 1, meanwhile: Callable[[], object] | None = None) -> Fetched:
    """Download `todo` into `<version_root>/.fetch/`, reusing complete files an interrupted run left there. A local
    release's pictures are decoded from the bytes copied, on up to `jobs` processes while the copying goes on.
    `meanwhile` (called once) is the caller's work that needs no fetched file: for a local release it runs once the
    last file is copied, while the workers decode the last pictures; else after the download."""
    cache = version_root / FETCH_DIR
    fetched = Fetched({}, {})
    missing = []
    for remote in todo:
        path = cache / _cache_name(remote)
        fetched.paths[remote.relpath] = path
        if not (path.is_file() and path.stat().st_size == remote.size):
            missing.append(remote)
    cache.mkdir(parents=True, exist_ok=True)
    with _progress(sum(f.size for f in missing), version, progress and bool(missing)) as advance:
        if isinstance(source, LocalSource):
            shown: list[str] = []

            def copies() -> Iterator[tuple[bytes, str]]:
                """Copy every file here (one process: file creation does not scale over cores) as the decoders
                take the pictures, so decoding overlaps copying."""
                for remote in missing:
                    sha256, data = _copy_local(source, version, remote, fetched.paths[remote.relpath])
                    fetched.sha256[remote.relpath] = sha256
                    advance(remote.size)
                    if data is not None:
                        shown.append(remote.relpath)
                        yield data, sha256

            pictures = sum(is_picture(remote.relpath) for remote in missing)
            verdicts = list(on_cores(_verdict_of, copies(), pictures, jobs, "decoding the pictures", meanwhile))
            fetched.verdicts = dict(zip(shown, verdicts, strict=True))
            return fetched
        for remote in missing:
            with atomic_path(fetched.paths[remote.relpath]) as tmp:
                fetched.sha256[remote.relpath] = copy_file_with_retries(source, version, remote, tmp, advance)
    if meanwhile is not None:
        meanwhile()
    return fetched


def _link_or_copy(src: Path, dest: Path) -> bool:
    """Hard-link `src` at `dest`, whose folder exists (no bytes copied: True); copy with times kept where the file
    system has no links (False)."""
    try:
        os.link(src, dest)
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        shutil.copy2(src, dest)
        return False
    return True


def stage_release(release: Path, plan: MirrorPlan, fetched: Fetched, listing: Iterable[RemoteFile]
                  ) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Assemble the new mirror in a staging folder next to `release`; return it with its lock entries.

    Kept files are hard links to the current mirror, so the old tree stays whole until the caller swaps. A file
    linked in from a copy of this run keeps the hash of the bytes written; any other fetched file is hashed here.
    """
    staging = make_staging_dir(release)
    files: dict[str, dict[str, Any]] = {}
    stamps = {remote.relpath: remote.stamp for remote in listing}
    try:
        for folder in sorted({os.path.dirname(rel) for rel in [*plan.files, *fetched.paths]} - {""}):
            (staging / folder).mkdir(parents=True, exist_ok=True)  # once per folder, not once per file
        for rel, entry in plan.files.items():
            _link_or_copy(release / rel, staging / rel)
            files[rel] = {**entry, **file_entry(staging / rel, entry["sha256"])}
        for rel, path in fetched.paths.items():
            linked = _link_or_copy(path, staging / rel)
            stamp = stamps.get(rel)
            sha256 = (linked and fetched.sha256.get(rel)) or sha256_file(staging / rel)
            files[rel] = {**file_entry(staging / rel, sha256),
                          **({"source_stamp": stamp} if stamp else {})}
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, dict(sorted(files.items()))


def build_lock(version: str, label: str, files: dict[str, dict[str, Any]], build: dict[str, Any]) -> dict[str, Any]:
    """The content of `release.lock.json` (docs/design.md §2)."""
    return {"schema": LOCK_SCHEMA, "version": version, "source": label, "files": dict(sorted(files.items())),
            "build": build}
