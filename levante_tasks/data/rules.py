"""How `prepare` treats one task's manifest rows beyond the common path: the `ItemRules` each task folder's
`items.py` defines (`levante_tasks/tasks/<folder>/items.py`, gathered by `levante_tasks.data.items`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from levante_tasks.data.manifest import ManifestRow


def no_exclusion(row: ManifestRow) -> str | None:
    """Every row of the task becomes an item (or a problem)."""
    return None


@dataclass(frozen=True)
class ItemRules:
    """How `prepare` treats one task's manifest rows beyond the common path (options from answer + alternatives).

    `exclude(row)` names why a row is left out by design (counted, not a problem) or returns None. `notes` is a
    line for the generated README about any task-specific step of the builder (empty when there is none).
    """

    exclude: Callable[[ManifestRow], str | None] = no_exclusion
    notes: str = ""
