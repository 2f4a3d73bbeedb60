"""The shipped patch sets, one per supported lmms-eval version: series, patch files, hash pins and full-tree pins.

They live in `levante_tasks/lmms/patcher/patches/lmms-eval/v<version>/` (package data, so a plain wheel install has
them; `patches/` at the repository root links there). Format: docs/patcher.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.lmms.patcher.unidiff import FilePatch, PatchError, parse_patch
from levante_tasks.textfile import read_text

PATCHES_DIR = Path(__file__).resolve().parent / "patches" / "lmms-eval"
# The version `make` installs (constraints.txt) until 0.7.3's release commit is known and pinned.
DEFAULT_VERSION = "0.7.2"
UNKNOWN = "-"  # pins.txt placeholder for a tag or commit that is not (yet) public


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
    """The patch folder of one lmms-eval version, read lazily; paths are relative to the folder holding lmms_eval/."""

    folder: Path

    def _shown(self, name: str) -> str:
        """A file of this set for messages (never an absolute path, which would name the user's folders)."""
        return display_path(self.folder / name)

    def _read(self, name: str) -> str:
        return read_text(self.folder / name, self._shown(name))

    @cached_property
    def series(self) -> list[str]:
        """Patch file names in application order."""
        return [ln.strip() for ln in self._read("series").splitlines() if ln.strip() and not ln.startswith("#")]

    @cached_property
    def _pin_lines(self) -> list[list[str]]:
        return [ln.split() for ln in self._read("pins.txt").splitlines() if ln.strip() and not ln.startswith("#")]

    def _header(self, key: str, fields: int) -> list[str]:
        """The fields after `key` of the one `<key> ...` line of pins.txt with `fields` fields in all."""
        for line in self._pin_lines:
            if line[0] == key and len(line) == fields:
                return line[1:]
        raise LevanteError(f"{self._shown('pins.txt')}: no '{key}' line with {fields - 1} values")

    @cached_property
    def version(self) -> str:
        """The lmms-eval version these patches are for (`version <v>` line)."""
        return self._header("version", 2)[0]

    @cached_property
    def upstream(self) -> dict[str, str | None]:
        """`{"repo", "tag", "commit", "version", "wheel", "wheel_sha256"}`; tag and commit are None when unknown."""
        repo, tag, commit = self._header("upstream", 4)
        wheel, wheel_sha256 = self._header("wheel", 3)
        return {
            "repo": repo,
            "tag": None if tag == UNKNOWN else tag,
            "commit": None if commit == UNKNOWN else commit,
            "version": self.version,
            "wheel": wheel,
            "wheel_sha256": wheel_sha256,
        }

    @property
    def identity(self) -> str:
        """What pins the upstream code: its commit, else `wheel-sha256:<sha256 of the PyPI wheel>`."""
        return self.upstream["commit"] or f"wheel-sha256:{self.upstream['wheel_sha256']}"

    @property
    def label(self) -> str:
        """Short human-readable pin, e.g. `v0.7.2 cb45ac4d4a66` or `0.7.3 wheel-sha256:5709f9f9f56a`."""
        up = self.upstream
        return f"{up['tag']} {up['commit'][:12]}" if up["commit"] else f"{self.version} {self.identity[:25]}"

    @cached_property
    def pins(self) -> list[PatchPin]:
        """One pin per series entry, in series order; every patch must be pinned exactly once."""
        by_name = {f[0]: PatchPin(*f) for f in self._pin_lines if f[0] not in ("upstream", "wheel") and len(f) == 4}
        missing = [name for name in self.series if name not in by_name]
        if missing or len(by_name) != len(self.series):
            raise LevanteError(f"{self._shown('pins.txt')}: pins do not match the series (unpinned: {missing})")
        return [by_name[name] for name in self.series]

    def file_patch(self, name: str) -> FilePatch:
        """The parsed single-file diff of series entry `name`."""
        try:
            sections = parse_patch(self._read(name))
        except PatchError as exc:
            raise LevanteError(f"{self._shown(name)}: {exc}") from exc
        if len(sections) != 1:
            raise LevanteError(f"{self._shown(name)}: expected one file per patch, found {len(sections)}")
        return sections[0]

    @cached_property
    def chains(self) -> dict[str, list[str]]:
        """`{path: [upstream sha256, sha256 after each patch touching it, in order]}`; the last is fully patched."""
        chain: dict[str, list[str]] = {}
        for pin in self.pins:
            chain.setdefault(pin.path, [pin.before]).append(pin.after)
        return chain

    @cached_property
    def targets(self) -> dict[str, tuple[str, str]]:
        """`{path: (pinned sha256, fully patched sha256)}` for every file the series touches."""
        return {path: (chain[0], chain[-1]) for path, chain in self.chains.items()}

    @cached_property
    def patch_set_sha256(self) -> str:
        """sha256 of the `sha256sum`-style listing of the series (`<sha256>  <name>` per line, in order).

        Reproduce it in the patch folder with `sha256sum $(grep -v '^#' series) | sha256sum`.
        """
        listing = "".join(f"{sha256_bytes((self.folder / n).read_bytes())}  {n}\n" for n in self.series)
        return sha256_bytes(listing.encode("utf-8"))

    @property
    def tree_pins_name(self) -> str:
        """The `sha256sum` list of every upstream file: the commit's files, else the wheel's (no commit known)."""
        commit = self.upstream["commit"]
        return f"lmms-eval-{commit}.sha256" if commit else f"lmms-eval-{self.version}-wheel.sha256"

    @cached_property
    def tree_pins(self) -> dict[str, str]:
        """`{path: sha256}` of every upstream file (see `tree_pins_name`)."""
        pins = {}
        for line in self._read(self.tree_pins_name).splitlines():
            if line.strip():
                digest, path = line.split("  ", 1)
                pins[path] = digest
        return pins

    @cached_property
    def wheel_omits(self) -> frozenset[str]:
        """Files of the pinned commit that the PyPI wheel does not ship (none when the wheel itself is the pin)."""
        if not self.upstream["commit"]:
            return frozenset()
        lines = self._read("wheel-omits.txt").splitlines()
        return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


def patch_sets(root: Path = PATCHES_DIR) -> dict[str, PatchSet]:
    """Every shipped patch set by the version it is for (`v<version>/` folders holding a pins.txt)."""
    found = {}
    for folder in sorted(root.glob("v*/pins.txt")):
        patch_set = PatchSet(folder.parent)
        if folder.parent.name != f"v{patch_set.version}":
            raise LevanteError(
                f"{display_path(folder)}: says version {patch_set.version} but lies in {folder.parent.name}/"
            )
        found[patch_set.version] = patch_set
    if not found:
        raise LevanteError(f"{display_path(root)}: no lmms-eval patch sets here (a broken levante-tasks install?)")
    return found
