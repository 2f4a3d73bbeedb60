"""How `prepare` treats same-different-selection's rows: rows without an answer key excluded; a context sentence.
Its instruction is the `item` text (the `prompt` is empty), also in LEVANTE's translation table."""

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules, TableKey, prompt_keys


def _sds_exclusion(row: ManifestRow) -> str | None:
    return "instruction_or_multi_select_trial" if not row.options() else None


def _table_keys(row: ManifestRow) -> list[TableKey]:
    return [*(prompt_keys(row) if row.get("prompt") else []), TableKey(text=row.get("item"))]


RULES = ItemRules(_sds_exclusion, "Instruction and multi-select rows (no answer key) are excluded; repeated "
                                  "item_uids are numbered.",
                  context_from="something-same-1", context_for="something-same-2", table_keys=_table_keys)
