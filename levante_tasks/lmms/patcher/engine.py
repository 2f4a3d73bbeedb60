"""Apply, check and revert a pinned patch set on one lmms-eval tree, and keep the record of what is applied.

Every target file must hash to a state of its patch chain: pinned (upstream), fully patched, or `outdated` (only
the first patches of its chain applied, as an older patch set with fewer patches left it); anything else is
refused by name. Files are rewritten atomically with their mode kept, so an interrupted run leaves each file whole
and a re-run finishes the job. The record `lmms_eval/.levante_patches.json` is written last and removed first.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from levante_tasks.atomic import atomic_path, clean_stale
from levante_tasks.errors import LevanteError, display_path
from levante_tasks.lmms.patcher.patchset import PatchSet, sha256_bytes
from levante_tasks.lmms.patcher.target import Target, package_root
from levante_tasks.lmms.patcher.unidiff import PatchError, apply_hunks

RECORD_NAME = ".levante_patches.json"
RECORD_SCHEMA_VERSION = 2
PINNED, PATCHED, OUTDATED = "pinned", "patched", "outdated"


@dataclass
class Outcome:
    """What one patch/revert run found and did: per-file state before it, and the files it (would have) changed."""

    target: Target
    before: dict[str, str]
    changed: list[str] = field(default_factory=list)
    record: dict[str, Any] | None = None


def _read_target(target: Target, patch_set: PatchSet, path: str) -> tuple[int, bytes]:
    """`path`'s bytes and how many patches of its chain they carry (0 = upstream); refuse a missing or foreign file."""
    file = target.root / path
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise LevanteError(f"{target.shown(path)}: cannot read patch target ({exc.strerror})") from exc
    digest = sha256_bytes(data)
    chain = patch_set.chains[path]
    if digest not in chain:
        restore = (
            "git checkout -- lmms_eval"
            if target.kind == "checkout"
            else f"pip install --force-reinstall --no-deps lmms-eval=={patch_set.version}"
        )
        raise LevanteError(
            f"{target.shown(path)}: sha256 {digest[:16]} matches neither the pinned lmms-eval {patch_set.version} "
            f"file nor its patched form; refusing to touch it (restore it, e.g. {restore})"
        )
    return chain.index(digest), data


def _read_targets(target: Target, patch_set: PatchSet) -> dict[str, tuple[int, bytes]]:
    """Every target file read and hashed once: `{path: (step, bytes)}` (see `_read_target`)."""
    return {path: _read_target(target, patch_set, path) for path in patch_set.chains}


def _states(patch_set: PatchSet, read: dict[str, tuple[int, bytes]]) -> dict[str, str]:
    """`{path: "pinned" | "patched" | "outdated"}` from the steps of `_read_targets`."""
    last = {path: len(chain) - 1 for path, chain in patch_set.chains.items()}
    return {path: PINNED if step == 0 else PATCHED if step == last[path] else OUTDATED
            for path, (step, _) in read.items()}


def file_states(target: Target, patch_set: PatchSet) -> dict[str, str]:
    """`{path: "pinned" | "patched" | "outdated"}` for every target file; refuse a missing or foreign file by name."""
    return _states(patch_set, _read_targets(target, patch_set))


def _transform(patch_set: PatchSet, path: str, step: int, data: bytes, reverse: bool) -> bytes:
    """Run the rest of `path`'s series over its bytes (at `step` of its chain), or undo what it carries, checking
    every step's hash."""
    pins = [pin for pin in patch_set.pins if pin.path == path]
    text = data.decode("utf-8")
    for pin in reversed(pins[:step]) if reverse else pins[step:]:
        goal = pin.before if reverse else pin.after
        where = display_path(patch_set.folder / pin.name)
        try:
            text = apply_hunks(text, patch_set.file_patch(pin.name), reverse=reverse)
        except PatchError as exc:
            raise LevanteError(f"{where}: {exc}") from exc
        if sha256_bytes(text.encode("utf-8")) != goal:
            raise LevanteError(f"{where}: {path} does not reach its pinned hash")
    return text.encode("utf-8")


def _replace_files(target: Target, contents: dict[str, bytes], before_renames: Callable[[], None]) -> None:
    """Write every file's new bytes to a temp sibling first, then call `before_renames`, then rename them all in,
    keeping each file's mode.

    A write that fails (full disk, read-only folder) therefore changes nothing; only a kill between the renames
    leaves some files replaced, each whole, which a re-run finishes. Temp files of killed runs are cleaned first.
    """
    for folder in {(target.root / path).parent for path in contents}:
        clean_stale(folder)
    with contextlib.ExitStack() as renames:
        for path, data in contents.items():
            file = target.root / path
            try:
                mode = file.stat().st_mode & 0o7777
                tmp = renames.enter_context(atomic_path(file))
                tmp.write_bytes(data)
                os.chmod(tmp, mode)
            except OSError as exc:
                raise LevanteError(
                    f"{target.shown(path)}: cannot write the file ({exc.strerror}); nothing was changed"
                ) from exc
        before_renames()


def expected_record(target: Target, patch_set: PatchSet) -> dict[str, Any]:
    """The record a fully patched tree carries: upstream pin, patch set hash, series and per-file hashes."""
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "tool": "levante-tasks lmms-eval patch",
        "upstream": {**patch_set.upstream, "identity": patch_set.identity},
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


def _planned(target: Target, patch_set: PatchSet, reverse: bool) -> tuple[Outcome, dict[str, bytes]]:
    """The outcome so far and the new bytes of every file not yet in the wanted state (patched, or pinned when
    `reverse`); each target file is read and hashed once."""
    read = _read_targets(target, patch_set)
    outcome = Outcome(target, _states(patch_set, read))
    done = PINNED if reverse else PATCHED
    contents = {path: _transform(patch_set, path, *read[path], reverse=reverse)
                for path, state in outcome.before.items() if state != done}
    outcome.changed = sorted(contents)
    return outcome, contents


def apply_patch_set(target: Target, patch_set: PatchSet, dry_run: bool = False) -> Outcome:
    """Bring every target file to its fully patched hash and (re)write the record; a no-op when done."""
    outcome, new_contents = _planned(target, patch_set, reverse=False)
    outcome.record = expected_record(target, patch_set)
    if dry_run:
        return outcome
    _replace_files(target, new_contents, before_renames=lambda: None)
    if read_record(target) != outcome.record:
        _write_record(target, outcome.record)
    return outcome


def revert_patch_set(target: Target, patch_set: PatchSet, dry_run: bool = False) -> Outcome:
    """Restore every (fully or partly) patched file to its exact upstream bytes and remove the record."""
    outcome, old_contents = _planned(target, patch_set, reverse=True)
    if dry_run:
        return outcome
    _replace_files(target, old_contents, before_renames=lambda: record_path(target).unlink(missing_ok=True))
    return outcome


def overall_state(states: dict[str, str]) -> str:
    """`patched` when every target file is fully patched, `unpatched` when none is touched, else `partial`."""
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
