"""The sha256 of a file's bytes: the one file hash that locks, cards and their checks share."""

from __future__ import annotations

import hashlib
import os


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
