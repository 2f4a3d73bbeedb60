"""Where a release comes from: a local folder or the public bucket over HTTP(S) (GCS XML listing API).

Both kinds answer the same three questions: which versions exist, which files a version holds (with sizes),
and how to copy one file to a local path.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import requests

from levante_tasks.errors import LevanteError

DATED_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
RETRIES = 3
BACKOFF_SECONDS = 0.5
TIMEOUT_SECONDS = 60
_CHUNK = 1 << 16


@dataclass(frozen=True)
class RemoteFile:
    """One file of a release version: path relative to `<base>/<version>/`, and its size in bytes."""

    relpath: str
    size: int


class LocalSource:
    """A release mirror on disk: `<base>/<version>/...`."""

    def __init__(self, base: Path) -> None:
        if not base.is_dir():
            raise LevanteError(f"{base.name or base}: release base folder does not exist")
        self.base = base
        self.label = "local"

    def versions(self) -> list[str]:
        return sorted(p.name for p in self.base.iterdir() if p.is_dir() and (p / "manifest.csv").exists())

    def files(self, version: str) -> list[RemoteFile]:
        root = self.base / version
        if not root.is_dir():
            raise LevanteError(f"{version}: no such version in the release base (found: {', '.join(self.versions())})")
        return [RemoteFile(p.relative_to(root).as_posix(), p.stat().st_size)
                for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")]

    def copy(self, version: str, relpath: str, dest: Path, on_bytes: Callable[[int], None]) -> None:
        with open(self.base / version / relpath, "rb") as src, open(dest, "wb") as out:
            while chunk := src.read(_CHUNK):
                out.write(chunk)
                on_bytes(len(chunk))


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
            files.append(RemoteFile(key[len(root):], int(_find_text(content, "Size") or 0)))
        if not files:
            raise LevanteError(f"{self.url}/{version}: no files listed for this version")
        return sorted(files, key=lambda f: f.relpath)

    def copy(self, version: str, relpath: str, dest: Path, on_bytes: Callable[[int], None]) -> None:
        url = f"{self.bucket_url}/{quote(self._key(version, relpath))}"
        with self.session.get(url, stream=True, timeout=TIMEOUT_SECONDS) as response:
            response.raise_for_status()
            with open(dest, "wb") as out:
                for chunk in response.iter_content(_CHUNK):
                    out.write(chunk)
                    on_bytes(len(chunk))


def _children(element: ET.Element, local_name: str) -> list[ET.Element]:
    return [e for e in element if e.tag.rsplit("}", 1)[-1] == local_name]


def _find_text(element: ET.Element, local_name: str) -> str | None:
    for child in element:
        if child.tag.rsplit("}", 1)[-1] == local_name:
            return child.text
    return None


def _with_retries(call: Callable[[], requests.Response], what: str) -> requests.Response:
    """Call with retries on connection errors and 5xx/429; 4xx other than 429 fail at once."""
    last: Exception | None = None
    for attempt in range(RETRIES):
        try:
            response = call()
            if response.status_code < 400:
                return response
            if response.status_code != 429 and response.status_code < 500:
                raise LevanteError(f"{what}: HTTP {response.status_code}")
            last = requests.HTTPError(f"HTTP {response.status_code}")
        except requests.RequestException as exc:
            last = exc
        time.sleep(BACKOFF_SECONDS * 2**attempt)
    raise LevanteError(f"{what}: failed after {RETRIES} attempts ({type(last).__name__})")


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
            found = ", ".join(available) or "none"
            raise LevanteError(f"version {requested!r} not found in the release (found: {found})")
        return requested
    dated = sorted(v for v in available if DATED_VERSION.match(v))
    if not dated:
        raise LevanteError(f"no dated version in the release (found: {', '.join(available) or 'none'}); pass --version")
    return dated[-1]


def copy_file_with_retries(source: LocalSource | HttpSource, version: str, remote: RemoteFile, dest: Path,
                           on_bytes: Callable[[int], None]) -> None:
    """Copy one file to `dest` (a temp path), retrying transient failures; a short file counts as a failure."""
    last: Exception | None = None
    for attempt in range(RETRIES):
        written = 0

        def count(n: int) -> None:
            nonlocal written
            written += n
            on_bytes(n)

        try:
            source.copy(version, remote.relpath, dest, count)
            if written != remote.size:
                raise OSError(f"got {written} of {remote.size} bytes")
            return
        except (OSError, requests.RequestException) as exc:
            last = exc
            on_bytes(-written)
            time.sleep(BACKOFF_SECONDS * 2**attempt)
    raise LevanteError(f"{remote.relpath}: download failed after {RETRIES} attempts ({last})")
