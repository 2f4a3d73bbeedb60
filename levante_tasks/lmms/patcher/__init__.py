"""Patcher for the pinned lmms-eval versions: apply, check, revert and audit our fixes (see docs/patcher.md).

`installed_lmms_eval()` says which lmms-eval is installed and whether our patches are in effect, and
`applied_patch_record()` returns the full record of the patches in effect, for results to cite.
"""

from levante_tasks.lmms.patcher.engine import applied_patch_record
from levante_tasks.lmms.patcher.provenance import installed_lmms_eval

__all__ = ["applied_patch_record", "installed_lmms_eval"]
