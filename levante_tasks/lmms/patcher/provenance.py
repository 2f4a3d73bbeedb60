"""Which lmms-eval a run used and whether our current patch set is in effect, for results to record."""

from __future__ import annotations

import os
from typing import Any

from levante_tasks.errors import LevanteError, display_path
from levante_tasks.lmms.patcher.engine import applied_patch_record
from levante_tasks.lmms.patcher.target import PACKAGE, installed_version, package_root, resolve_target


def installed_lmms_eval(target_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """`{"version", "commit", "patch_set_sha256", "patched"}` of an lmms-eval tree (default: the one Python imports).

    `commit` is the pinned upstream commit, or `wheel-sha256:<sha256>` for a version pinned only by its PyPI
    wheel (0.7.3), or None for a version we have no patches for. `patch_set_sha256` is that of the patches in
    effect (None when none are), and `patched` is True only when they are the shipped set for this version.
    Reads no more than the target files and the record; imports nothing from lmms_eval.
    """
    root = package_root(target_dir)
    if not (root / PACKAGE / "__init__.py").is_file():
        raise LevanteError(f"{display_path(root)}: no lmms_eval package here")
    try:
        patch_set = resolve_target(root)[1]
    except LevanteError:  # a version or checkout we have no patches for: still say what it is
        patch_set = None
    record = applied_patch_record(root)
    in_effect = record.get("patch_set_sha256") if record else None
    return {
        "version": patch_set.version if patch_set else installed_version(root),
        "commit": patch_set.identity if patch_set else None,
        "patch_set_sha256": in_effect,
        "patched": patch_set is not None and in_effect == patch_set.patch_set_sha256,
    }
