"""Lazy image access: datasets store paths relative to the version dir; pixels are read only when asked."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

from PIL import Image, ImageFile

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
    """Open one referenced image as RGB, decoded now, so a damaged file fails here, naming itself.

    `verify()` first: lmms-eval sets `ImageFile.LOAD_TRUNCATED_IMAGES`, which makes a truncated file decode
    silently as grey; verify still rejects it (and checks PNG chunk checksums). Pillow reports damage as
    OSError, SyntaxError ("broken PNG file"), ValueError or EOFError.
    """
    path = resolve_image(version_root, relpath)
    try:
        data = path.read_bytes()
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("RGB")
    except OSError as exc:
        problem = "permission denied" if isinstance(exc, PermissionError) else exc.__class__.__name__
        raise LevanteError(f"{relpath}: unreadable image ({problem})") from None
    except (SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        raise LevanteError(f"{relpath}: unreadable image ({exc.__class__.__name__})") from None
