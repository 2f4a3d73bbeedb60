"""How `prepare` treats same-different-selection's rows: rows without an answer key excluded; a context sentence."""

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules


def _sds_exclusion(row: ManifestRow) -> str | None:
    return "instruction_or_multi_select_trial" if not row.options() else None


RULES = ItemRules(_sds_exclusion, "Instruction and multi-select rows (no answer key) are excluded; repeated "
                                  "item_uids are numbered.",
                  context_from="something-same-1", context_for="something-same-2")
