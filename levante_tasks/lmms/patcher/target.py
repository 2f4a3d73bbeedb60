"""Find the lmms-eval tree to work on (an installed package or a source checkout) and the patch set it needs.

A target is the folder that holds `lmms_eval/`; all pinned paths are relative to it. The patch set is chosen by
the installed version (its `lmms_eval-<version>.dist-info`), by the commit of a checkout, or, for a bare copy of
the package, by which patch set recognises its files.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.lmms.patcher.patchset import PatchSet, patch_sets, sha256_bytes

PACKAGE = "lmms_eval"


@dataclass(frozen=True)
class Target:
    """The folder holding `lmms_eval/`, and whether it is a git checkout (else an installed package)."""

    root: Path
    kind: str  # "checkout" or "installed"

    @property
    def package_dir(self) -> Path:
        """The `lmms_eval/` package folder."""
        return self.root / PACKAGE

    def shown(self, path: str = "") -> str:
        """`path` (relative to the root) for messages: never an absolute path outside the working folder."""
        root = display_path(self.root)
        return f"{root}/{path}" if path else root


def installed_root() -> Path:
    """The folder holding the importable lmms_eval package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LevanteError("lmms_eval: not installed in this Python; pass --target DIR")
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


def package_root(path: str | os.PathLike[str] | None) -> Path:
    """The folder holding lmms_eval/ for `path` (that folder or lmms_eval/ itself; None = the installed one)."""
    root = installed_root() if path is None else Path(path).resolve()
    if root.name == PACKAGE and not (root / PACKAGE).is_dir():
        root = root.parent
    return root


def installed_version(root: Path) -> str | None:
    """The version named by the `lmms_eval-<version>.dist-info` next to the package, or None when there is none."""
    versions = {re.sub(r"^lmms_eval-|\.dist-info$", "", d.name) for d in root.glob("lmms_eval-*.dist-info")}
    if len(versions) > 1:
        raise LevanteError(f"{display_path(root)}: several lmms_eval dist-info folders ({', '.join(sorted(versions))})")
    return versions.pop() if versions else None


def resolve_target(path: str | os.PathLike[str] | None) -> tuple[Target, PatchSet]:
    """Resolve `path` (a folder holding lmms_eval/, or lmms_eval/ itself; None = the installed package).

    A git checkout must be at the pinned commit of some patch set; an installed package whose dist-info names a
    version we have no patches for is refused before any file is read.
    """
    root = package_root(path)
    if not (root / PACKAGE / "__init__.py").is_file():
        raise LevanteError(f"{display_path(root)}: no lmms_eval package here")
    sets = patch_sets()
    if (root / ".git").exists():
        head = _git_head(root)
        by_commit = {s.upstream["commit"]: s for s in sets.values() if s.upstream["commit"]}
        if head in by_commit:
            return Target(root, "checkout"), by_commit[head]
        pinned = ", ".join(f"{s.upstream['tag']} = {commit}" for commit, s in by_commit.items())
        raise LevanteError(f"{display_path(root)}: checkout is at {head}, not a pinned commit ({pinned})")
    version = installed_version(root)
    if version is not None:
        if version not in sets:
            raise LevanteError(
                f"{display_path(root)}: lmms-eval {version} is installed; patches exist for {', '.join(sets)}"
            )
        return Target(root, "installed"), sets[version]
    return Target(root, "installed"), _recognise(root, sets)


def _recognise(root: Path, sets: dict[str, PatchSet]) -> PatchSet:
    """The one patch set whose every target file has a hash it knows (a copy of the package without dist-info)."""
    matches = [s for s in sets.values() if all(_known(root / p, chain) for p, chain in s.chains.items())]
    if len(matches) != 1:
        raise LevanteError(
            f"{display_path(root)}: no lmms_eval dist-info, and its files match "
            f"{'no' if not matches else 'more than one'} patch set ({', '.join(sets)}); pass an installed tree"
        )
    return matches[0]


def _known(file: Path, chain: list[str]) -> bool:
    """True when `file` exists and hashes to a state of its patch chain."""
    try:
        return sha256_bytes(file.read_bytes()) in chain
    except OSError:
        return False


def _git_head(root: Path) -> str:
    """`git rev-parse HEAD` of the checkout at `root`."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except OSError as exc:
        raise LevanteError(f"{display_path(root)}: cannot run git for the checkout's commit ({exc.strerror})") from exc
    except subprocess.CalledProcessError as exc:
        raise LevanteError(f"{display_path(root)}: git rev-parse HEAD failed (exit {exc.returncode})") from exc
    return done.stdout.strip()
