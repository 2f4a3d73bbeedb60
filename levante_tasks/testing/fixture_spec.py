"""The fixture items of one task: the `FixtureSpec` each task folder's `fixture.py` defines
(`levante_tasks/tasks/<folder>/fixture.py`, gathered by `levante_tasks.testing.fixture_data`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FixtureSpec:
    """The fixture items of one task: trial types and option counts cycled over `n_items` items.

    `kind` = "math" writes the egma-math set instead (every `MATH_TYPES` entry three times, then sliders).
    `first_number` numbers the task's items (`manifest_row`, the prompt phrase, text options) from there; None
    numbers them after every task listed before it in the registry. The seven first tasks pin theirs, so their
    fixture data (and the golden records made from it) stays the same whatever is added. `story` is the story
    text that starts every prompt (theory-of-mind).
    """

    trial_types: tuple[str, ...] = ("test",)
    option_counts: tuple[int, ...] = (4,)
    option_kind: str = "image"
    context_image: bool = False
    n_items: int = 6
    kind: str = "choice"
    first_number: int | None = None
    story: str = ""
