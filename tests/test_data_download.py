"""Downloads from a bucket-like HTTP server on loopback: listing, retries, lock file, no partial files."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

import pytest
import requests
from data_helpers import write_release
from PIL import Image

from levante_tasks.data import sources
from levante_tasks.data.mirror import sha256_file
from levante_tasks.data.prepare import prepare
from levante_tasks.errors import LevanteError

NS = "http://doc.s3.amazonaws.com/2006-03-01"


class FakeBucket(BaseHTTPRequestHandler):
    """Serves `root` as bucket `bkt` with the GCS XML list API (2 keys per page, with ETags) and object GETs."""

    root: Path
    extra_keys: dict[str, int]  # keys listed (with a size) that have no file behind them
    truncate: dict[str, int]  # key -> how many more GETs of it send only half of the bytes
    gets: Counter

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        parts = urlsplit(self.path)
        if parts.path == "/bkt":
            return self._list(parse_qs(parts.query))
        key = unquote(parts.path.removeprefix("/bkt/"))
        path = self.root / key
        if not path.is_file():
            self.send_error(404)
            return
        body = path.read_bytes()
        self.gets[key] += 1
        if self.truncate.get(key, 0) > 0:
            self.truncate[key] -= 1
            body = body[: len(body) // 2]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _list(self, query: dict[str, list[str]]) -> None:
        prefix = query.get("prefix", [""])[0]
        delimiter = query.get("delimiter", [None])[0]
        keys = sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())
        keys = [k for k in sorted([*keys, *self.extra_keys]) if k.startswith(prefix)]
        start = int(query.get("continuation-token", ["0"])[0])
        body = [f'<ListBucketResult xmlns="{NS}">']
        if delimiter:
            for common in sorted({prefix + k[len(prefix):].split(delimiter)[0] + delimiter
                                  for k in keys if delimiter in k[len(prefix):]}):
                body.append(f"<CommonPrefixes><Prefix>{escape(common)}</Prefix></CommonPrefixes>")
        else:
            for key in keys[start:start + 2]:
                if key in self.extra_keys:
                    size, etag = self.extra_keys[key], "0"
                else:
                    size = (self.root / key).stat().st_size
                    etag = hashlib.md5((self.root / key).read_bytes()).hexdigest()
                body.append(f'<Contents><Key>{escape(key)}</Key><Size>{size}</Size><ETag>"{etag}"</ETag></Contents>')
            if start + 2 < len(keys):
                body.append(f"<NextContinuationToken>{start + 2}</NextContinuationToken>")
        body.append("</ListBucketResult>")
        data = "".join(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def bucket(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "BACKOFF_SECONDS", 0.0)
    root = tmp_path / "bucket"
    write_release(root / "corpus_data", version="2026-01-01")
    write_release(root / "corpus_data", version="2026-02-01")
    handler = type("Handler", (FakeBucket,), {"root": root, "truncate": {}, "gets": Counter(), "extra_keys": {}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}/bkt/corpus_data"
    server.shutdown()
    server.server_close()


def _png(red: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (red, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


def _partials(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".part")]


def test_http_release_resolves_newest_version_and_locks_hashes(bucket, tmp_path):
    handler, url = bucket
    result = prepare(url, None, str(tmp_path / "data"), strict=True, progress=False)
    assert result.version == "2026-02-01" and result.fetched == 5
    version_root = tmp_path / "data/2026-02-01"
    lock = json.loads((version_root / "release.lock.json").read_text())
    assert lock["source"] == url and set(lock["files"]) == {
        "manifest.csv", "visual/vocab/cat.png", "visual/vocab/dog.png", "visual/vocab/cup.png", "visual/vocab/sun.png"}
    for rel, entry in lock["files"].items():
        assert entry["sha256"] == sha256_file(version_root / "release" / rel)
    again = prepare(url, None, str(tmp_path / "data"), strict=True, progress=False)
    assert again.fetched == 0 and not again.rebuilt
    assert sum(handler.gets.values()) == 5  # nothing downloaded twice


def test_the_download_bar_is_off_when_output_is_not_a_terminal(bucket, tmp_path, capsys):
    _, url = bucket
    result = prepare(url, None, str(tmp_path / "data"), strict=True, progress=True)
    assert result.fetched == 5
    assert "fetch 2026-02-01" not in capsys.readouterr().err  # a log file keeps its first error line visible


class _Reply:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


@pytest.mark.parametrize(("replies", "calls", "waits", "error"), [
    ([503, 429, 200], 3, [0.5, 1.0], None),  # transient answers are retried, BACKOFF_SECONDS * 2**k apart
    ([404], 1, [], r"^listing: HTTP 404$"),  # a definite answer fails at once
    ([500, 502, 503], 3, [0.5, 1.0], r"^listing: failed after 3 attempts \(HTTPError\)$"),  # no wait after the last
    (["down", "down", "down"], 3, [0.5, 1.0], r"^listing: failed after 3 attempts \(ConnectionError\)$"),
])
def test_http_calls_retry_transient_failures_only(monkeypatch, replies, calls, waits, error):
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    pending = list(replies)

    def call() -> _Reply:
        reply = pending.pop(0)
        if reply == "down":
            raise requests.ConnectionError("refused")
        return _Reply(reply)

    if error is None:
        assert sources._with_retries(call, "listing").status_code == 200
    else:
        unreachable = error.startswith(r"^listing: failed")
        with pytest.raises(sources.SourceUnreachable if unreachable else LevanteError, match=error) as caught:
            sources._with_retries(call, "listing")
        assert isinstance(caught.value, sources.SourceUnreachable) == unreachable
    assert len(replies) - len(pending) == calls and slept == waits


def test_truncated_download_is_retried(bucket, tmp_path):
    handler, url = bucket
    handler.truncate["corpus_data/2026-01-01/visual/vocab/cat.png"] = 2
    prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert handler.gets["corpus_data/2026-01-01/visual/vocab/cat.png"] == 3
    original = handler.root / "corpus_data/2026-01-01/visual/vocab/cat.png"
    assert (tmp_path / "data/2026-01-01/release/visual/vocab/cat.png").read_bytes() == original.read_bytes()


def test_persistent_truncation_fails_without_partial_files(bucket, tmp_path):
    handler, url = bucket
    handler.truncate["corpus_data/2026-01-01/visual/vocab/dog.png"] = 99
    with pytest.raises(LevanteError, match=r"visual/vocab/dog.png: download failed after 3 attempts"):
        prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert not (tmp_path / "data/2026-01-01/release/visual/vocab/dog.png").exists()
    assert _partials(tmp_path / "data") == []
    assert not (tmp_path / "data/2026-01-01/datasets").exists()


def test_interrupt_mid_file_leaves_no_partial_file(tmp_path, monkeypatch):
    write_release(tmp_path / "rel")
    real_copy = sources.LocalSource.copy

    def copy_then_interrupt(self, version, relpath, dest, on_chunk):
        if relpath.endswith("dog.png"):
            dest.write_bytes(b"half")
            raise KeyboardInterrupt
        return real_copy(self, version, relpath, dest, on_chunk)

    monkeypatch.setattr(sources.LocalSource, "copy", copy_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        prepare(str(tmp_path / "rel"), "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert not (tmp_path / "data/2026-01-01/release/visual/vocab/dog.png").exists()
    assert _partials(tmp_path / "data") == []
    monkeypatch.setattr(sources.LocalSource, "copy", real_copy)
    result = prepare(str(tmp_path / "rel"), "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert result.fetched == 2  # resume fetches the interrupted file and the one after it, nothing else


def test_offline_rebuild_from_locked_mirror(bucket, tmp_path):
    _, url = bucket
    prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    dead = "http://127.0.0.1:9/bkt/corpus_data"  # nothing listens on the discard port
    result = prepare(dead, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert result.version == "2026-01-01" and result.fetched == 0


def test_same_size_change_in_the_bucket_is_refetched(bucket, tmp_path):
    handler, url = bucket
    prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    source = handler.root / "corpus_data/2026-01-01/visual/vocab/dog.png"
    old = source.read_bytes()
    new = next(body for body in map(_png, range(256)) if len(body) == len(old) and body != old)
    source.write_bytes(new)  # same size, new bytes: only the ETag tells
    result = prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert result.fetched == 1 and result.rebuilt
    assert handler.gets["corpus_data/2026-01-01/visual/vocab/dog.png"] == 2
    assert (tmp_path / "data/2026-01-01/release/visual/vocab/dog.png").read_bytes() == new


def test_unsafe_key_in_the_listing_is_refused(bucket, tmp_path):
    handler, url = bucket
    handler.extra_keys["corpus_data/2026-01-01/../../escape.txt"] = 3
    with pytest.raises(LevanteError, match=r"^\.\./\.\./escape\.txt: unsafe path in the release listing \(refused\)$"):
        prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    assert not list(tmp_path.rglob("escape.txt"))


def test_offline_with_a_damaged_mirror_is_one_line(bucket, tmp_path):
    _, url = bucket
    prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    (tmp_path / "data/2026-01-01/release/visual/vocab/cat.png").write_bytes(b"damaged")
    dead = "http://127.0.0.1:9/bkt/corpus_data"
    with pytest.raises(LevanteError, match=r"^2026-01-01/visual/vocab/cat.png: missing or changed in the local mirror, "
                                           r"and the release source is unreachable$"):
        prepare(dead, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)


def test_version_gone_from_a_reachable_bucket_is_an_error_not_offline(bucket, tmp_path):
    handler, url = bucket
    prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
    shutil.rmtree(handler.root / "corpus_data/2026-01-01")
    with pytest.raises(LevanteError, match=r"version '2026-01-01' not found in the release \(found: 2026-02-01\)"):
        prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)


def test_bucket_version_without_manifest(bucket, tmp_path):
    handler, url = bucket
    (handler.root / "corpus_data/2026-01-01/manifest.csv").unlink()
    with pytest.raises(LevanteError, match=r"^2026-01-01/manifest.csv: missing from the release$"):
        prepare(url, "2026-01-01", str(tmp_path / "data"), strict=True, progress=False)
