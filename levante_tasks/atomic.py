"""Write files so that readers never see a half-written file: write to a temp sibling, then rename."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp path next to `target`; rename it onto `target` only if the block succeeds."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temp file for writing; it replaces `target` only when the block exits cleanly."""
    with atomic_path(target) as tmp, open(tmp, mode, **kwargs) as handle:
        yield handle


def write_json(target: str | os.PathLike[str], data: Any) -> None:
    """Write `data` as pretty, key-sorted JSON (stable bytes for hashing and diffs), atomically."""
    with atomic_open(target, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True, ensure_ascii=False)
        handle.write("\n")


def write_text(target: str | os.PathLike[str], text: str) -> None:
    """Write text atomically (UTF-8, newline translation off so bytes are identical across platforms)."""
    with atomic_open(target, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
