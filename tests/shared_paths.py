"""Where the read-only shared folder lives: `../shared` beside the checkout, or $LEVANTE_SHARED."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path | None:
    """The shared folder (fact sheets, LEVANTE sample), or None when this checkout has none beside it."""
    for candidate in (os.environ.get("LEVANTE_SHARED"), REPO_ROOT.parent / "shared"):
        if candidate and (Path(candidate) / "levante-sample").is_dir():
            return Path(candidate)
    return None


def irt_fixture_dir() -> Path:
    """The shared IRT fixture folder; skips the calling test with a reason when shared/ is absent."""
    shared = shared_dir()
    if shared is None:
        pytest.skip("../shared/levante-sample is not present next to this checkout (set LEVANTE_SHARED)")
    return shared / "levante-sample" / "irt-fixture"
