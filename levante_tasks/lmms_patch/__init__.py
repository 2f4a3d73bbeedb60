"""Pinned-commit patcher for lmms-eval: apply, check, revert and audit our fixes (see docs/patcher.md).

`applied_patch_record()` returns the record of the patches in effect, for results to cite.
"""

from levante_tasks.lmms_patch.engine import applied_patch_record

__all__ = ["applied_patch_record"]
