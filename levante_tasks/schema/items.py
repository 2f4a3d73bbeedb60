"""The item row of a prepared dataset (one per scored item; docs/design.md §3), option letters, slider tolerance.

`ItemRow` is the contract: `levante-tasks prepare` writes exactly these columns to `test.parquet` (schema
`ITEM_SCHEMA`, derived from the fields) and the task layer reads them. `ITEM_SCHEMA` is built on first use (module
`__getattr__`): the readers of run records (summarize, verify, rescore) import this module for the letters and the
slider tolerance and load no pyarrow for it (nor numpy, in verify: ~0.3 s of CPU per process).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

LETTERS = "ABCDEFGH"  # answer letters A, B, ...: an item has at most len(LETTERS) options
SLIDER_TOLERANCE = 0.15  # a slider answer is correct iff |value - target| < 0.15 * max (rlevante recode_slider)


def slider_tolerance(range_max: float) -> float:
    """The absolute tolerance of a number-line slider item whose line ends at `range_max`."""
    return SLIDER_TOLERANCE * range_max


def slider_chance(target: float, low: float, high: float) -> float:
    """P(correct) for a uniformly random slider position: the tolerance window clipped to the line."""
    half = slider_tolerance(high)
    return (min(target + half, high) - max(target - half, low)) / (high - low)


def letters_for(n_options: int) -> list[str]:
    """The answer letters of an n-option item (A, B, ...)."""
    if n_options > len(LETTERS):
        raise ValueError(f"{n_options} options: at most {len(LETTERS)} are supported")
    return list(LETTERS[:n_options])


@dataclass
class ItemRow:
    """One scored item. Image paths are relative to `<data_dir>/<version>/`; text cells are "" when absent."""

    item_uid: str  # unique within the task (repeated manifest uids become `<uid>__<k>`)
    source_item_uid: str  # uid exactly as written in the manifest
    task: str  # internal name (levante_tasks.schema.tasks)
    task_id: str  # the manifest's short task id
    trial_type: str
    prompt: str = ""  # the child-facing instruction
    prompt_phrase: str = ""  # target word / sentence / expression
    question: str = ""  # model-facing, no answer clause (core.prompts.compose adds it); `<image N>` = picture N
    story: str = ""  # theory-of-mind story text
    answer: str = ""  # key of the correct option (== options[0]); the target number of a slider item
    options: list[str] = field(default_factory=list)  # canonical order: answer first, then distractors as listed
    option_kind: str = "text"  # image, text or slider
    option_images: list[str] = field(default_factory=list)  # one per canonical option (empty for text options)
    stimulus_image: str = ""  # context image (`<image 1>`), "" when none
    chance_level: float = math.nan  # 1 / n_options; slider: P(hit) of a uniform random position
    n_options: int = 0
    response_format: str = "choice"  # choice or slider
    range_min: float = math.nan  # number-line range (NaN elsewhere)
    range_max: float = math.nan
    manifest_row: int = 0  # 1-based data-row number in manifest.csv

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict in column order (what the data layer edits and writes)."""
        return asdict(self)


@functools.cache
def _item_schema() -> pa.Schema:
    """The Arrow schema of `ItemRow`'s fields, in field order (built once)."""
    import pyarrow as pa

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "list[str]": pa.list_(pa.string())}
    return pa.schema([(f.name, types[str(f.type)]) for f in fields(ItemRow)])


def __getattr__(name: str) -> Any:
    """`ITEM_SCHEMA`, built on first use (the module docstring says why)."""
    if name == "ITEM_SCHEMA":
        return _item_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
