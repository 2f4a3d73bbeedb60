"""How `prepare` treats one task's manifest rows beyond the common path: the `ItemRules` each task folder's
`items.py` defines (`levante_tasks/tasks/<folder>/items.py`, gathered by `levante_tasks.data.items`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from levante_tasks.data.manifest import ManifestRow


def no_exclusion(row: ManifestRow) -> str | None:
    """Every row of the task becomes an item (or a problem)."""
    return None


def never(row: ManifestRow) -> bool:
    """No row of the task is special in this way."""
    return False


@dataclass(frozen=True)
class TableKey:
    """One way to find a manifest row's text in LEVANTE's translation table (data.translations): an English `text`
    (compared with the `en` cell of the task's rows, normalised) or an `item_id`; `phrase` says the cell found is
    a word or phrase that our frame quotes (`core.locale_text` `match_text`), not a whole instruction."""

    text: str = ""
    item_id: str = ""
    phrase: bool = False


def prompt_keys(row: ManifestRow) -> list[TableKey]:
    """The row's `prompt` is its only language-bearing text, a whole instruction (most tasks)."""
    return [TableKey(text=row.get("prompt"))]


@dataclass(frozen=True)
class ItemRules:
    """How `prepare` treats one task's manifest rows beyond the common path (options from answer + alternatives).

    `exclude(row)` names why a row is left out by design (counted, not a problem) or returns None. `notes` is a
    line for the generated README about any task-specific step of the builder (empty when there is none).
    `picture_row(row)`: the row's options are pictures although the task's are not (egma-math's non-symbolic
    cards). `slider(row)`: the row is answered with a number on a line, not a choice (egma-math's number-line
    slider). `stories`: items pair with a question of the theory-of-mind corpus (its story starts the prompt;
    option pictures are used when every option has one). `context_from` / `context_for`: the trial type whose
    `item` text is a context sentence, and the trial type whose prompt it starts (same-different-selection).
    `table_labels`: the task's rows in LEVANTE's translation table carry these `labels` (empty: the task's own
    name); `table_keys(row)`: how a row's text is found there, in order (data.localize).
    """

    exclude: Callable[[ManifestRow], str | None] = no_exclusion
    notes: str = ""
    picture_row: Callable[[ManifestRow], bool] = never
    slider: Callable[[ManifestRow], bool] = never
    stories: bool = False
    context_from: str | None = None  # None: no trial type (a manifest's trial_type is a string)
    context_for: str | None = None
    table_labels: tuple[str, ...] = ()
    table_keys: Callable[[ManifestRow], list[TableKey]] = prompt_keys
