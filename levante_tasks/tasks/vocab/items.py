"""How `prepare` treats the vocab task's manifest rows: the common path; in LEVANTE's translation table a word is
"the <word>" (or the bare word: verbs, adjectives)."""

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules, TableKey


def _table_keys(row: ManifestRow) -> list[TableKey]:
    word = row.get("item")
    return [TableKey(text=f"the {word}", phrase=True), TableKey(text=word, phrase=True)]


RULES = ItemRules(table_keys=_table_keys)
