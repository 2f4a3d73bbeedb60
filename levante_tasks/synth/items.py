"""Synthetic item records: one `Item` per manifest row, grouped per task with the images its rows reference.

The per-task generators live in the task folders (`levante_tasks/tasks/<folder>/synth.py`); this module holds
the shared record types, the manifest prompt templates and the per-task random streams.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from levante_tasks.schema.items import LETTERS
from levante_tasks.schema.tasks import task_info

MANIFEST_COLUMNS = (
    "task", "task_id", "item_uid", "trial_type", "prompt", "item", "answer", "response_alternatives",
    "chance_level", "prompt_phrase", "prompt_image", "full_prompt",
)


@dataclass(frozen=True)
class Item:
    """One manifest row; `None` is written as the literal `NA`. `difficulty` is the IRT b centre (None: unscored)."""

    task: str
    item_uid: str
    trial_type: str
    prompt: str | None
    item: str | None
    answer: str | None
    alternatives: tuple[str, ...] | None
    chance: float | None
    prompt_phrase: str | None
    prompt_image: str | None
    full_prompt: str | None
    difficulty: float | None = None

    @property
    def task_id(self) -> str:
        """LEVANTE short task id (`math`, `tom`, ...)."""
        return task_info(self.task).task_id

    def manifest_row(self) -> list[str]:
        """The 12 manifest fields as strings, `NA` for missing, comma-joined alternatives."""
        values = (
            self.task, self.task_id, self.item_uid, self.trial_type, self.prompt, self.item, self.answer,
            ",".join(self.alternatives) if self.alternatives else None,
            None if self.chance is None else str(self.chance),
            self.prompt_phrase, self.prompt_image, self.full_prompt,
        )
        return ["NA" if value is None else value for value in values]


@dataclass
class TaskItems:
    """The rows of one task, every image they reference (stem -> picture), the image extension, corpus rows."""

    task: str
    items: list[Item]
    images: dict[str, Image.Image] = field(default_factory=dict)
    ext: str = "png"
    corpus: list[list[str]] = field(default_factory=list)  # corpus CSV rows (theory-of-mind only)


def answer_with(n: int, placeholder: str, lead: str = "Answer with") -> str:
    """The option suffix of a full_prompt, e.g. `Answer with A or B. A: <image1>; B: <image2>`."""
    letters = list(LETTERS[:n])
    joined = f"{letters[0]} or {letters[1]}" if n == 2 else ", ".join(letters[:-1]) + f", or {letters[-1]}"
    options = "; ".join(f"{letter}: <{placeholder}{k + 1}>" for k, letter in enumerate(letters))
    return f"{lead} {joined}. {options}"


def picture_choice_prompt(n: int = 4) -> str:
    """The real vocab/trog template: pick the image matching `<prompt_phrase>`."""
    return f'Choose the image that matches the text: "<prompt_phrase>". {answer_with(n, "image")}'


def stream(seed: int, name: str) -> np.random.Generator:
    """An independent generator per (seed, name): editing one task's generator never shifts another's draws."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])

