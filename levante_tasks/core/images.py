"""Lazy image access: datasets store paths relative to the version dir; pixels are read only when asked, and decoded
once per process (`core.image_cache`)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

from PIL import Image, ImageFile

from levante_tasks.core.image_cache import shared_cache
from levante_tasks.errors import LevanteError


@contextlib.contextmanager
def strict_decoding() -> Iterator[None]:
    """Decode with Pillow's truncated-image tolerance off (lmms-eval turns `LOAD_TRUNCATED_IMAGES` on for the
    whole process when imported; a truncated file would then decode silently as grey)."""
    previous = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = previous


def resolve_image(version_root: str | os.PathLike[str], relpath: str) -> Path:
    """Absolute path of an image reference stored in a dataset (relative to `<data_dir>/<version>/`)."""
    path = Path(version_root) / relpath
    if not path.is_file():
        raise LevanteError(f"{relpath}: image referenced by the dataset is missing under {Path(version_root).name}/")
    return path


def open_image(version_root: str | os.PathLike[str], relpath: str) -> Image.Image:
    """Open one referenced image as RGB, decoded now, so a damaged file fails here, naming itself. A picture this
    process already decoded (the same bytes) comes from the decoded-image cache (`core.image_cache`), as a copy."""
    path = resolve_image(version_root, relpath)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _unreadable(relpath, exc) from None
    return shared_cache().get(hashlib.sha256(data).digest(), lambda: decode_image(relpath, data))


def decode_image(relpath: str, data: bytes) -> Image.Image:
    """Verify and decode a picture file's bytes as RGB.

    `verify()` first: lmms-eval sets `ImageFile.LOAD_TRUNCATED_IMAGES`, which makes a truncated file decode
    silently as grey; verify still rejects it (and checks PNG chunk checksums). Pillow reports damage as
    OSError, SyntaxError ("broken PNG file"), ValueError or EOFError.
    """
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("RGB")
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        raise _unreadable(relpath, exc) from None


def _unreadable(relpath: str, exc: BaseException) -> LevanteError:
    """The one-line error for a picture file that cannot be read or decoded."""
    problem = "permission denied" if isinstance(exc, PermissionError) else exc.__class__.__name__
    return LevanteError(f"{relpath}: unreadable image ({problem})")
