"""Index a release's `visual/<task>/` folders so option keys and prompt images resolve to files.

A folder that cannot be listed is recorded (`unreadable`), never mistaken for one without images.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from levante_tasks.core.images import strict_decoding
from levante_tasks.errors import problem_text
from levante_tasks.schema import layout

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"}


def normalised_keys(key: str) -> list[str]:
    """Spellings tried for an image key: as written, lower-case, spaces as `_`, `-`, or removed (vocab needs them)."""
    lower = key.strip().lower()
    variants = [key.strip(), lower, lower.replace(" ", "_"), lower.replace(" ", "-"), lower.replace(" ", "")]
    variants += [re.sub(r"[^a-z0-9]+", "_", lower).strip("_")]
    return list(dict.fromkeys(variants))


class VisualIndex:
    """Maps (task, image key) to a path relative to the version dir, e.g. `release/visual/vocab/acorn.webp`."""

    def __init__(self, release_root: Path, prefix: str = layout.RELEASE_DIR) -> None:
        self._by_task: dict[str, dict[str, str]] = {}
        self._root = release_root
        self._prefix = prefix
        self.unreadable: list[tuple[str, str]] = []  # (folder relative to the release, why), e.g. permission denied
        visual = release_root / layout.VISUAL_DIR
        if not visual.is_dir():
            return
        files: dict[str, list[Path]] = {}
        for folder, subfolders, names in os.walk(visual, onerror=self._note_unreadable):
            subfolders.sort()
            parts = Path(folder).relative_to(visual).parts
            if parts:
                files.setdefault(parts[0], []).extend(self._images_in(Path(folder), names))
        for task, paths in sorted(files.items()):
            table: dict[str, str] = {}
            for path in sorted(paths):
                rel = f"{prefix}/{path.relative_to(release_root).as_posix()}"
                for key in (path.name, path.stem, path.stem.lower()):
                    table.setdefault(key, rel)
            self._by_task[task] = table

    def _images_in(self, folder: Path, names: list[str]) -> list[Path]:
        """The image files among a folder's `names`; a folder whose entries cannot be examined is noted."""
        try:
            return [folder / name for name in names
                    if Path(name).suffix.lower() in IMAGE_SUFFIXES and (folder / name).is_file()]
        except OSError as exc:  # listable but not enterable (mode r--): is_file() cannot stat the entries
            self._note_unreadable(OSError(exc.errno, exc.strerror, str(folder)))
            return []

    def _note_unreadable(self, exc: OSError) -> None:
        folder = Path(exc.filename).relative_to(self._root).as_posix()
        self.unreadable.append((folder, problem_text(exc)))

    def find(self, task: str, key: str) -> str | None:
        """The image for `key` in `visual/<task>/`, trying the normalised spellings; None if absent."""
        table = self._by_task.get(task, {})
        for variant in normalised_keys(key):
            if variant in table:
                return table[variant]
        return None

    def absolute(self, rel: str) -> Path:
        """The file behind a relative reference returned by `find`."""
        return self._root / Path(rel).relative_to(self._prefix)

    def count(self, task: str) -> int:
        """Number of distinct image files under `visual/<task>/`."""
        return len(set(self._by_task.get(task, {}).values()))


def decode_problem(data: bytes) -> str | None:
    """None when the bytes of an image file decode fully, else why not (`verify()` alone skips the pixel data)."""
    with strict_decoding():
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.load()
        except UnidentifiedImageError:
            return "not an image format Pillow can read"
        except Exception:  # noqa: BLE001 - any decoder failure (OSError, SyntaxError, ...) means unusable
            return "the image data does not decode"
    return None
