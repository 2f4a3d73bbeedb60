"""How `prepare` treats the trog task's manifest rows: the common path, nothing special."""

from levante_tasks.data.rules import ItemRules

RULES = ItemRules()
