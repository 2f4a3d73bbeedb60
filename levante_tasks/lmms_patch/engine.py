"""Apply, check and revert the pinned patch set on one lmms-eval tree, and keep the record of what is applied.

Every target file must hash to its pinned (upstream) or fully patched value; anything else is refused by name.
Files are rewritten atomically with their mode kept, so an interrupted run leaves each file whole and a re-run
finishes the job. The record `lmms_eval/.levante_patches.json` is written last and removed first.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levante_tasks.atomic import atomic_path
from levante_tasks.errors import LevanteError
from levante_tasks.lmms_patch.patchset import UPSTREAM_VERSION, PatchSet, sha256_bytes
from levante_tasks.lmms_patch.target import Target, package_root
from levante_tasks.lmms_patch.unidiff import PatchError, apply_hunks

RECORD_NAME = ".levante_patches.json"
RECORD_SCHEMA_VERSION = 1
PINNED, PATCHED = "pinned", "patched"


@dataclass
class Outcome:
    """What one patch/revert run found and did: per-file state before it, and the files it (would have) changed."""

    target: Target
    before: dict[str, str]
    changed: list[str] = field(default_factory=list)
    record: dict[str, Any] | None = None


def file_states(target: Target, patch_set: PatchSet) -> dict[str, str]:
    """`{path: "pinned" | "patched"}` for every target file; refuse a missing or foreign file by name."""
    states = {}
    for path, (pinned, patched) in patch_set.targets.items():
        file = target.root / path
        try:
            digest = sha256_bytes(file.read_bytes())
        except OSError as exc:
            raise LevanteError(f"{file}: cannot read patch target ({exc.strerror})") from exc
        if digest == pinned:
            states[path] = PINNED
        elif digest == patched:
            states[path] = PATCHED
        else:
            raise LevanteError(
                f"{file}: sha256 {digest[:16]} matches neither the pinned lmms-eval {UPSTREAM_VERSION} file nor "
                f"its patched form; refusing to touch it (restore it, e.g. pip install --force-reinstall "
                f"--no-deps lmms-eval=={UPSTREAM_VERSION})"
            )
    return states


def _transform(patch_set: PatchSet, path: str, data: bytes, reverse: bool) -> bytes:
    """Run the series (or its reverse) over one file's bytes, checking the pinned hash at every step."""
    pins = [pin for pin in patch_set.pins if pin.path == path]
    text = data.decode("utf-8")
    for pin in reversed(pins) if reverse else pins:
        start, goal = (pin.after, pin.before) if reverse else (pin.before, pin.after)
        if sha256_bytes(text.encode("utf-8")) != start:
            raise LevanteError(f"{patch_set.folder / pin.name}: {path} is not at the hash this patch starts from")
        try:
            text = apply_hunks(text, patch_set.file_patch(pin.name), reverse=reverse)
        except PatchError as exc:
            raise LevanteError(f"{patch_set.folder / pin.name}: {exc}") from exc
        if sha256_bytes(text.encode("utf-8")) != goal:
            raise LevanteError(f"{patch_set.folder / pin.name}: {path} does not reach its pinned hash")
    return text.encode("utf-8")


def _replace_file(file: Path, data: bytes) -> None:
    """Atomically replace `file` with `data`, keeping its permission bits."""
    mode = file.stat().st_mode & 0o7777
    with atomic_path(file) as tmp:
        tmp.write_bytes(data)
        os.chmod(tmp, mode)


def expected_record(target: Target, patch_set: PatchSet) -> dict[str, Any]:
    """The record a fully patched tree carries: upstream commit, patch set hash, series and per-file hashes."""
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "tool": "levante-tasks lmms-eval patch",
        "upstream": {**patch_set.upstream, "version": UPSTREAM_VERSION},
        "target_kind": target.kind,
        "patch_set_sha256": patch_set.patch_set_sha256,
        "series": [{"name": n, "sha256": sha256_bytes((patch_set.folder / n).read_bytes())} for n in patch_set.series],
        "files": {p: {"pinned": a, "patched": b} for p, (a, b) in sorted(patch_set.targets.items())},
    }


def record_path(target: Target) -> Path:
    """Where the record of applied patches lives inside the tree."""
    return target.package_dir / RECORD_NAME


def read_record(target: Target) -> dict[str, Any] | None:
    """The record as stored, or None when there is none (or it is unreadable)."""
    try:
        return json.loads(record_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_record(target: Target, record: dict[str, Any]) -> None:
    """Write the record atomically, readable by everyone who can read the package."""
    with atomic_path(record_path(target)) as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o644)


def apply_patch_set(target: Target, patch_set: PatchSet, dry_run: bool = False) -> Outcome:
    """Patch every pinned file still at its upstream hash and (re)write the record; a no-op when done."""
    outcome = Outcome(target, file_states(target, patch_set))
    new_contents = {
        path: _transform(patch_set, path, (target.root / path).read_bytes(), reverse=False)
        for path, state in outcome.before.items()
        if state == PINNED
    }
    outcome.changed = sorted(new_contents)
    outcome.record = expected_record(target, patch_set)
    if dry_run:
        return outcome
    for path, data in new_contents.items():
        _replace_file(target.root / path, data)
    if read_record(target) != outcome.record:
        _write_record(target, outcome.record)
    return outcome


def revert_patch_set(target: Target, patch_set: PatchSet, dry_run: bool = False) -> Outcome:
    """Restore every patched file to its exact upstream bytes and remove the record; a no-op when pristine."""
    outcome = Outcome(target, file_states(target, patch_set))
    old_contents = {
        path: _transform(patch_set, path, (target.root / path).read_bytes(), reverse=True)
        for path, state in outcome.before.items()
        if state == PATCHED
    }
    outcome.changed = sorted(old_contents)
    if dry_run:
        return outcome
    record_path(target).unlink(missing_ok=True)
    for path, data in old_contents.items():
        _replace_file(target.root / path, data)
    return outcome


def overall_state(states: dict[str, str]) -> str:
    """`patched` when every target file is patched, `unpatched` when none is, else `partial`."""
    kinds = set(states.values())
    return PATCHED if kinds == {PATCHED} else "unpatched" if kinds <= {PINNED} else "partial"


def applied_patch_record(target_dir: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The record of the patches in effect in an lmms-eval tree (default: the installed one), for results to cite.

    Returns None unless the record exists and every file it lists still has its recorded patched hash.
    Needs no patch folder, so it also works where only the patched lmms-eval is present.
    """
    root = package_root(target_dir)
    record = read_record(Target(root, "unknown"))
    if not record or not isinstance(record.get("files"), dict):
        return None
    for path, hashes in record["files"].items():
        file = root / path
        if not file.is_file() or sha256_bytes(file.read_bytes()) != hashes.get("patched"):
            return None
    return record
