"""Index a release's `visual/<task>/` folders so option keys and prompt images resolve to files."""

from __future__ import annotations

import re
from pathlib import Path

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"}


def normalised_keys(key: str) -> list[str]:
    """Spellings tried for an image key: as written, lower-case, spaces as `_`, `-`, or removed (vocab needs them)."""
    lower = key.strip().lower()
    variants = [key.strip(), lower, lower.replace(" ", "_"), lower.replace(" ", "-"), lower.replace(" ", "")]
    variants += [re.sub(r"[^a-z0-9]+", "_", lower).strip("_")]
    return list(dict.fromkeys(variants))


class VisualIndex:
    """Maps (task, image key) to a path relative to the version dir, e.g. `release/visual/vocab/acorn.webp`."""

    def __init__(self, release_root: Path, prefix: str = "release") -> None:
        self._by_task: dict[str, dict[str, str]] = {}
        self._root = release_root
        self._prefix = prefix
        visual = release_root / "visual"
        if not visual.is_dir():
            return
        for task_dir in sorted(p for p in visual.iterdir() if p.is_dir()):
            table: dict[str, str] = {}
            for path in sorted(task_dir.rglob("*")):
                if path.suffix.lower() not in IMAGE_SUFFIXES or not path.is_file():
                    continue
                rel = f"{prefix}/{path.relative_to(release_root).as_posix()}"
                for key in (path.name, path.stem, path.stem.lower()):
                    table.setdefault(key, rel)
            self._by_task[task_dir.name] = table

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
