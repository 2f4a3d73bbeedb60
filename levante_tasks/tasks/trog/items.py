"""How `prepare` treats the trog task's manifest rows: the common path. In LEVANTE's translation table a sentence
is its own text, a one-word item (noun, verb, adjective) the whole prompt with its "..." filled ("Choose the
picture of the shoe."); `trog-item-N` also finds the row of the item whose answer starts with `N-`."""

import re

from levante_tasks.data.manifest import ManifestRow
from levante_tasks.data.rules import ItemRules, TableKey

_ITEM_NUMBER = re.compile(r"(\d+)-")


def _table_keys(row: ManifestRow) -> list[TableKey]:
    item, prompt = row.get("item"), row.get("prompt")
    one_word = " " not in item and prompt.endswith("...")
    number = _ITEM_NUMBER.match(row.get("answer"))
    bridge = [TableKey(item_id=f"trog-item-{int(number.group(1))}", phrase=not one_word)] if number else []
    if one_word:
        return [TableKey(text=f"{prompt[:-3].rstrip()} {item}"), TableKey(text=item, phrase=True), *bridge]
    return [TableKey(text=item, phrase=True), *bridge]


RULES = ItemRules(table_keys=_table_keys)
