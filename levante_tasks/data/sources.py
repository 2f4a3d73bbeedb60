"""Where a release comes from: a local folder or the public bucket over HTTP(S) (GCS XML listing API).

Both kinds answer the same three questions: which versions exist, which files a version holds (with sizes
and a change stamp), and how to copy one file to a local path. A local source can also hash a file in place,
so a changed stamp costs a read, not a copy. Listing raises on anything it cannot read (an unreadable
folder must never look like an empty one) and refuses symlinked folders and symlinks that leave the release.
Hidden names (`.x`) are never part of a release.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from levante_tasks.errors import LevanteError, problem_text
from levante_tasks.filehash import sha256_file
from levante_tasks.schema import layout

if TYPE_CHECKING:  # imported where a bucket is used: a local release never needs them (~0.2 s of start-up)
    import requests
    from tenacity import Retrying

DATED_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
RETRIES = 3
BACKOFF_SECONDS = 0.5
TIMEOUT_SECONDS = 60
_CHUNK = 1 << 16


@dataclass(frozen=True)
class RemoteFile:
    """One file of a release version: path relative to `<base>/<version>/`, its size, and a change stamp.

    The stamp changes whenever the content may have changed (local: mtime_ns; bucket: the ETag), or is None
    when the source offers none (then only the size is compared, unless `prepare --verify` re-hashes).
    """

    relpath: str
    size: int
    stamp: str | None = None


class SourceUnreachable(LevanteError):
    """The release source did not answer (network down, server errors): a complete local mirror may stand in."""


class _ShortRead(Exception):
    """A copy delivered fewer bytes than listed (a dropped connection): worth a retry."""


def check_relpath(relpath: str) -> None:
    """Refuse a listed path that could land outside the mirror (`..`, absolute, empty parts, backslashes)."""
    parts = relpath.split("/")
    if not relpath or relpath.startswith("/") or "\\" in relpath or any(p in ("", ".", "..") for p in parts):
        raise LevanteError(f"{relpath}: unsafe path in the release listing (refused)")


class LocalSource:
    """A release on disk: `<base>/<version>/...`.

    Symlinks: a symlink to a file inside `<base>/<version>/` is read as that file (the mirror gets a plain
    copy); a symlink that resolves outside it, and any symlinked folder, are refused with one line.
    """

    def __init__(self, base: Path) -> None:
        if not base.is_dir():
            raise LevanteError(f"{base.name or base}: release base folder does not exist")
        self.base = base
        self.label = "local"

    def versions(self) -> list[str]:
        return sorted(p.name for p in self.base.iterdir()
                      if not p.name.startswith(".") and p.is_dir() and os.path.isfile(p / layout.MANIFEST_FILE))

    def manifest_problem(self, version: str) -> str | None:
        """Why `<base>/<version>/` is no usable version though the folder exists; None when there is no folder."""
        if not layout.is_version_name(version) or not (self.base / version).is_dir():
            return None
        try:
            os.stat(self.base / version / layout.MANIFEST_FILE)
        except FileNotFoundError:
            return f"{version}/manifest.csv: missing from the release"
        except OSError as exc:
            return f"{version}/manifest.csv: {problem_text(exc)} (reading the release)"
        return f"{version}/manifest.csv: not a file"

    def files(self, version: str) -> list[RemoteFile]:
        root = self.base / version
        if not root.is_dir():
            raise LevanteError(f"{version}: no such version in the release base (found: {', '.join(self.versions())})")
        real_root = os.path.realpath(root)
        found = []
        pending = [(os.fspath(root), "")]
        while pending:
            folder, prefix = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as exc:
                where = f"{version}/{prefix.rstrip('/')}" if prefix else version
                raise LevanteError(f"{where}: {problem_text(exc)} (cannot list this release folder)") from exc
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                rel = prefix + entry.name
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if os.path.isdir(target):
                        raise LevanteError(f"{version}/{rel}: symlinked folder (refused)")
                    if os.path.commonpath([real_root, target]) != real_root:
                        raise LevanteError(f"{version}/{rel}: symlink to outside the release (refused)")
                elif entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, rel + "/"))
                    continue
                try:
                    info = entry.stat()
                except OSError as exc:
                    raise self._read_error(version, rel, exc) from exc
                if stat.S_ISREG(info.st_mode):
                    found.append(RemoteFile(rel, info.st_size, str(info.st_mtime_ns)))
        return sorted(found, key=lambda f: f.relpath)

    def _read_error(self, version: str, relpath: str, exc: OSError) -> LevanteError:
        return LevanteError(f"{version}/{relpath}: {problem_text(exc)} (reading the release)")

    def sha256(self, version: str, relpath: str) -> str:
        """Hex sha256 of a release file, read in place (one line naming the file when it cannot be read)."""
        try:
            return sha256_file(self.base / version / relpath)
        except OSError as exc:
            raise self._read_error(version, relpath, exc) from exc

    def copy(self, version: str, relpath: str, dest: Path, on_chunk: Callable[[bytes], None]) -> None:
        """Copy one release file to `dest`, showing `on_chunk` each chunk written; read failures name the release
        file, write failures stay OSError."""
        try:  # buffer sizes given: `open` then skips its terminal check and seek (two system calls per file)
            src = open(self.base / version / relpath, "rb", buffering=0)  # closed by the `with` below
        except OSError as exc:
            raise self._read_error(version, relpath, exc) from exc
        with src, open(dest, "wb", buffering=_CHUNK) as out:
            while True:
                try:
                    chunk = src.read(_CHUNK)
                except OSError as exc:
                    raise self._read_error(version, relpath, exc) from exc
                if not chunk:
                    break
                out.write(chunk)
                on_chunk(chunk)


class HttpSource:
    """A bucket served over HTTP(S) with the GCS XML API (`?list-type=2&prefix=...`), e.g. the public LEVANTE one."""

    def __init__(self, url: str, session: requests.Session | None = None) -> None:
        parts = urlsplit(url.rstrip("/"))
        segments = [s for s in parts.path.split("/") if s]
        if not segments:
            raise LevanteError(f"{url}: release URL must name a bucket (https://host/<bucket>/<prefix>)")
        self.url = url.rstrip("/")
        self.label = self.url
        self.bucket_url = f"{parts.scheme}://{parts.netloc}/{segments[0]}"
        self.prefix = "/".join(segments[1:])
        import requests

        self.session = session or requests.Session()

    def _key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def _list(self, prefix: str, delimiter: str | None) -> ET.Element:
        params = {"list-type": "2", "prefix": prefix}
        if delimiter:
            params["delimiter"] = delimiter
        pages: list[ET.Element] = []
        while True:
            response = _with_retries(lambda: self.session.get(self.bucket_url, params=params, timeout=TIMEOUT_SECONDS),
                                     f"{self.bucket_url}: listing {prefix or '/'}")
            try:
                page = ET.fromstring(response.content)
            except ET.ParseError as exc:
                raise LevanteError(f"{self.bucket_url}: listing is not XML ({exc})") from exc
            pages.append(page)
            token = _find_text(page, "NextContinuationToken")
            if not token:
                break
            params["continuation-token"] = token
        merged = ET.Element("merged")
        for page in pages:
            merged.extend(list(page))
        return merged

    def manifest_problem(self, version: str) -> str | None:
        """Always None: `versions()` lists every prefix; one without manifest.csv fails when its files are listed."""
        return None

    def versions(self) -> list[str]:
        listing = self._list(self._key("") + "/" if self.prefix else "", "/")
        names = []
        for common in _children(listing, "CommonPrefixes"):
            prefix = _find_text(common, "Prefix") or ""
            names.append(prefix.rstrip("/").rsplit("/", 1)[-1])
        return sorted(n for n in names if n)

    def files(self, version: str) -> list[RemoteFile]:
        root = self._key(version) + "/"
        listing = self._list(root, None)
        files = []
        for content in _children(listing, "Contents"):
            key = _find_text(content, "Key") or ""
            if key.endswith("/"):
                continue
            relpath = key[len(root):]
            check_relpath(relpath)
            if any(part.startswith(".") for part in relpath.split("/")):
                continue
            etag = (_find_text(content, "ETag") or "").strip('"') or None
            files.append(RemoteFile(relpath, int(_find_text(content, "Size") or 0), etag))
        if not files:
            raise LevanteError(f"{self.url}/{version}: no files listed for this version")
        return sorted(files, key=lambda f: f.relpath)

    def copy(self, version: str, relpath: str, dest: Path, on_chunk: Callable[[bytes], None]) -> None:
        url = f"{self.bucket_url}/{quote(self._key(version, relpath))}"
        with self.session.get(url, stream=True, timeout=TIMEOUT_SECONDS) as response:
            response.raise_for_status()
            with open(dest, "wb") as out:
                for chunk in response.iter_content(_CHUNK):
                    out.write(chunk)
                    on_chunk(chunk)


def _children(element: ET.Element, local_name: str) -> list[ET.Element]:
    return [e for e in element if e.tag.rsplit("}", 1)[-1] == local_name]


def _find_text(element: ET.Element, local_name: str) -> str | None:
    for child in element:
        if child.tag.rsplit("}", 1)[-1] == local_name:
            return child.text
    return None


def _retrying(*transient: type[Exception]) -> Retrying:
    """Up to RETRIES tries while a `transient` exception is raised, BACKOFF_SECONDS * 2**k apart; the last one
    is re-raised (any other exception at once)."""
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

    return Retrying(stop=stop_after_attempt(RETRIES), wait=wait_exponential(multiplier=BACKOFF_SECONDS),
                    retry=retry_if_exception_type(transient), reraise=True)


def _with_retries(call: Callable[[], requests.Response], what: str) -> requests.Response:
    """Call with retries on connection errors and 5xx/429; 4xx other than 429 fail at once.

    Running out of retries raises SourceUnreachable (the source may be down); a 4xx is a definite answer.
    """
    import requests

    def attempt() -> requests.Response:
        response = call()
        if response.status_code == 429 or response.status_code >= 500:
            raise requests.HTTPError(f"HTTP {response.status_code}")
        if response.status_code >= 400:
            raise LevanteError(f"{what}: HTTP {response.status_code}")
        return response

    try:
        return _retrying(requests.RequestException)(attempt)
    except requests.RequestException as exc:
        raise SourceUnreachable(f"{what}: failed after {RETRIES} attempts ({type(exc).__name__})") from exc


def open_source(base: str) -> LocalSource | HttpSource:
    """A source for `base`: an http(s) URL or a local folder."""
    if base.startswith(("http://", "https://")):
        return HttpSource(base)
    return LocalSource(Path(base).expanduser())


def resolve_version(source: LocalSource | HttpSource, requested: str | None) -> str:
    """The explicit version if given (must exist), else the newest dated `YYYY-MM-DD` version."""
    available = source.versions()
    if requested:
        if requested not in available:
            problem = source.manifest_problem(requested)
            if problem:
                raise LevanteError(problem)
            found = ", ".join(available) or "none"
            raise LevanteError(f"version {requested!r} not found in the release (found: {found})")
        return requested
    dated = sorted(v for v in available if DATED_VERSION.match(v))
    if not dated:
        raise LevanteError(f"no dated version in the release (found: {', '.join(available) or 'none'}); pass --version")
    return dated[-1]


def _transient(source: LocalSource | HttpSource) -> tuple[type[Exception], ...]:
    """The copy failures worth another try: a short read, and from a bucket any network error."""
    if isinstance(source, LocalSource):
        return (_ShortRead,)
    import requests

    return (_ShortRead, requests.RequestException)


def copy_file_with_retries(source: LocalSource | HttpSource, version: str, remote: RemoteFile, dest: Path,
                           on_bytes: Callable[[int], None]) -> str:
    """Copy one file to `dest` (a temp path), retrying transient failures; a short file counts as a failure.
    Returns the sha256 of the bytes written (hashed as they are written: the copy is not read again).

    Only network errors and short reads are retried: a local read error (LevanteError) or a failed write
    (OSError: disk full, read-only) will not go away by trying again.
    """
    transient = _transient(source)

    def attempt() -> str:
        written = 0
        digest = hashlib.sha256()

        def count(chunk: bytes) -> None:
            nonlocal written
            written += len(chunk)
            digest.update(chunk)
            on_bytes(len(chunk))

        try:
            source.copy(version, remote.relpath, dest, count)
            if written != remote.size:
                raise _ShortRead(f"got {written} of {remote.size} bytes")
        except transient:
            on_bytes(-written)
            raise
        return digest.hexdigest()

    try:
        return _retrying(*transient)(attempt)
    except transient as exc:
        raise LevanteError(f"{remote.relpath}: download failed after {RETRIES} attempts ({exc})") from exc
