"""Find the lmms-eval tree to work on: an installed package (site-packages) or a source checkout.

A target is the folder that holds `lmms_eval/`; all pinned paths are relative to it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from levante_tasks.errors import LevanteError

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


def resolve_target(path: str | os.PathLike[str] | None, expected_version: str, expected_commit: str) -> Target:
    """Resolve `path` (a folder holding lmms_eval/, or lmms_eval/ itself; None = the installed package).

    A git checkout must be at `expected_commit`; an installed package whose dist-info names another
    version is refused before any file is read.
    """
    root = package_root(path)
    if not (root / PACKAGE / "__init__.py").is_file():
        raise LevanteError(f"{root}: no lmms_eval package here")
    if (root / ".git").exists():
        head = _git_head(root)
        if head != expected_commit:
            raise LevanteError(f"{root}: checkout is at {head}, not the pinned commit {expected_commit}")
        return Target(root, "checkout")
    for dist_info in root.glob("lmms_eval-*.dist-info"):
        version = re.sub(r"^lmms_eval-|\.dist-info$", "", dist_info.name)
        if version != expected_version:
            raise LevanteError(f"{dist_info}: lmms-eval {version} is installed; patches exist for {expected_version}")
    return Target(root, "installed")


def _git_head(root: Path) -> str:
    """`git rev-parse HEAD` of the checkout at `root`."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise LevanteError(f"{root}: cannot read the checkout's commit with git ({exc})") from exc
    return done.stdout.strip()
