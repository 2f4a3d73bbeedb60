"""The shipped patch set for one pinned lmms-eval commit: series, patch files, hash pins and full-tree pins.

Everything lives in `patches/lmms-eval/<tag>/` at the repository root (see docs/patcher.md for the format).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from levante_tasks.errors import LevanteError
from levante_tasks.lmms_patch.unidiff import FilePatch, PatchError, parse_patch

UPSTREAM_TAG = "v0.7.2"
UPSTREAM_VERSION = "0.7.2"
REPO_ROOT = Path(__file__).resolve().parents[2]
PATCH_DIR = REPO_ROOT / "patches" / "lmms-eval" / UPSTREAM_TAG


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of `data`."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class PatchPin:
    """One series entry: the patch file, the single file it touches, and that file's hash before and after."""

    name: str
    path: str
    before: str
    after: str


@dataclass(frozen=True)
class PatchSet:
    """The patch folder of one upstream commit, read lazily; paths are relative to the folder holding lmms_eval/."""

    folder: Path = PATCH_DIR

    def _read(self, name: str) -> str:
        try:
            return (self.folder / name).read_text(encoding="utf-8")
        except OSError as exc:
            raise LevanteError(f"{self.folder / name}: cannot read patch-set file ({exc.strerror})") from exc

    @cached_property
    def series(self) -> list[str]:
        """Patch file names in application order."""
        return [ln.strip() for ln in self._read("series").splitlines() if ln.strip() and not ln.startswith("#")]

    @cached_property
    def _pin_lines(self) -> list[list[str]]:
        return [ln.split() for ln in self._read("pins.txt").splitlines() if ln.strip() and not ln.startswith("#")]

    @cached_property
    def upstream(self) -> dict[str, str]:
        """`{"repo", "tag", "commit"}` of the pinned upstream commit (first `upstream` line of pins.txt)."""
        for fields in self._pin_lines:
            if fields[0] == "upstream" and len(fields) == 4:
                return {"repo": fields[1], "tag": fields[2], "commit": fields[3]}
        raise LevanteError(f"{self.folder / 'pins.txt'}: no 'upstream <repo> <tag> <commit>' line")

    @cached_property
    def pins(self) -> list[PatchPin]:
        """One pin per series entry, in series order; every patch must be pinned exactly once."""
        by_name = {f[0]: PatchPin(*f) for f in self._pin_lines if f[0] != "upstream" and len(f) == 4}
        missing = [name for name in self.series if name not in by_name]
        if missing or len(by_name) != len(self.series):
            raise LevanteError(f"{self.folder / 'pins.txt'}: pins do not match the series (unpinned: {missing})")
        return [by_name[name] for name in self.series]

    def file_patch(self, name: str) -> FilePatch:
        """The parsed single-file diff of series entry `name`."""
        try:
            sections = parse_patch(self._read(name))
        except PatchError as exc:
            raise LevanteError(f"{self.folder / name}: {exc}") from exc
        if len(sections) != 1:
            raise LevanteError(f"{self.folder / name}: expected one file per patch, found {len(sections)}")
        return sections[0]

    @cached_property
    def targets(self) -> dict[str, tuple[str, str]]:
        """`{path: (pinned sha256, fully patched sha256)}` for every file the series touches."""
        chain: dict[str, tuple[str, str]] = {}
        for pin in self.pins:
            first = chain.get(pin.path, (pin.before, ""))[0]
            chain[pin.path] = (first, pin.after)
        return chain

    @cached_property
    def patch_set_sha256(self) -> str:
        """sha256 of the `sha256sum`-style listing of the series (`<sha256>  <name>` per line, in order).

        Reproduce it in the patch folder with `sha256sum $(grep -v '^#' series) | sha256sum`.
        """
        listing = "".join(f"{sha256_bytes((self.folder / n).read_bytes())}  {n}\n" for n in self.series)
        return sha256_bytes(listing.encode("utf-8"))

    @cached_property
    def tree_pins(self) -> dict[str, str]:
        """`{path: sha256}` of every file of the upstream commit (the `lmms-eval-<commit>.sha256` list)."""
        text = self._read(f"lmms-eval-{self.upstream['commit']}.sha256")
        pins = {}
        for line in text.splitlines():
            if line.strip():
                digest, path = line.split("  ", 1)
                pins[path] = digest
        return pins

    @cached_property
    def wheel_omits(self) -> frozenset[str]:
        """Files of the commit that the PyPI wheel of the same version does not ship."""
        lines = self._read("wheel-omits.txt").splitlines()
        return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))
