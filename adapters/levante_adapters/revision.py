"""Identify the model a run used: a public id and the immutable revision (snapshot commit) for auditing.

Stored results must not hold absolute paths, so a local folder is named by its basename unless it is a hub cache
snapshot (`.../models--org--name/snapshots/<40-hex>`), which yields the hub id and the commit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from levante_tasks.schema.markers import TEST_MODEL_CONFIG_KEY

UNKNOWN = "unknown"
_HEX40 = re.compile(r"[0-9a-f]{40}")


def is_commit(value: object) -> bool:
    """True for a full 40-character lowercase hex commit hash."""
    return isinstance(value, str) and _HEX40.fullmatch(value) is not None


def _snapshot_identity(path: Path) -> tuple[str, str] | None:
    """(hub id, commit) when `path` is a hub-cache snapshot folder, else None."""
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--") and is_commit(path.name):
        return path.parent.parent.name[len("models--"):].replace("--", "/"), path.name
    return None


def _cached_snapshot(repo_id: str) -> Path | None:
    """Snapshot folder of a hub id in the local cache (no network), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return None
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001 - an invalid repo id simply has no cached snapshot
        return None
    return Path(found).parent if isinstance(found, str) else None


def load_revision(pretrained: str, revision: str | None) -> dict[str, str]:
    """`from_pretrained` kwargs that load a hub model at `revision` (a 40-hex commit), so the recorded revision is
    the one loaded; a local folder is what it holds (there `revision` only names where it came from)."""
    if revision is None:
        return {}
    if not is_commit(revision):
        raise ValueError(f"revision={revision!r}: expected a 40-character hex commit hash")
    return {} if Path(pretrained).expanduser().is_dir() else {"revision": revision}


def resolve_identity(
    pretrained: str,
    commit_hash: str | None = None,
    model_id: str | None = None,
    revision: str | None = None,
) -> dict[str, str]:
    """Return {"model_id", "revision"}: explicit overrides win, then the snapshot path, then `commit_hash`.

    `commit_hash` is what transformers recorded while loading (`config._commit_hash`); the revision is
    "unknown" when no 40-hex commit can be established.
    """
    if revision is not None and not is_commit(revision):
        raise ValueError(f"revision={revision!r}: expected a 40-character hex commit hash")
    path = Path(pretrained).expanduser()
    found_id, found_rev = None, None
    if path.is_dir():
        snapshot = _snapshot_identity(path.resolve())
        found_id, found_rev = snapshot if snapshot else (path.resolve().name, None)
    else:
        found_id = pretrained
        cached = _cached_snapshot(pretrained)
        snapshot = _snapshot_identity(cached.resolve()) if cached else None
        found_rev = snapshot[1] if snapshot else None
    if found_rev is None and is_commit(commit_hash):
        found_rev = commit_hash
    return {"model_id": model_id or found_id, "revision": revision or found_rev or UNKNOWN}


def test_model_mark(config: Any) -> dict[str, bool]:
    """`{"test_model": True}` for a checkpoint whose config marks it a random-init test model (schema.markers),
    else {}: added to the identity the answers carry, so summaries can say so."""
    return {"test_model": True} if getattr(config, TEST_MODEL_CONFIG_KEY, None) else {}
