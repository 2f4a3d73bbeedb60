"""The option-order seeds (order replicates) a LEVANTE task variant can have; `core.options` says what each shows.

Every variant has seeds DEFAULT_SEEDS; generate_until in English with original images also has the order
replicates up to MAX_ORDERS - 1 (`levante_<task>_seed<k>`, k = 3..31), so a model that returns text, not option
scores, can be asked an item under balanced orders (docs/tasks.md, Option orders).
"""

from __future__ import annotations

DEFAULT_SEEDS = (0, 1, 2)
MAX_ORDERS = 32  # option-order seeds (order replicates) 0 .. MAX_ORDERS-1
