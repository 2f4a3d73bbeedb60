"""How `prepare` treats the matrix_reasoning task's manifest rows: the common path, nothing special."""

from levante_tasks.data.rules import ItemRules

RULES = ItemRules()
