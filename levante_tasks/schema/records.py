"""The per-item record (docs/design.md §4): written by the task layer, read by summaries and the comparison.

Each line of lmms-eval's `samples_<task>.jsonl` holds one record under `RECORD_KEY`, with the keys of
`ItemRecord` (choice items) or `SliderRecord` (number-line slider items) in field order. Option indices and
scores are in canonical order (index 0 = the correct answer), next to the presented order. A record holds what
its parser was given besides the response (presented order, option texts, slider range), so a saved response can
be re-parsed without the data (`core.reparse`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from levante_tasks.schema.variant import Control, OutputType

RECORD_KEY = "levante_item"
OUTPUT_TYPES = tuple(t.value for t in OutputType)
VARIANTS = tuple(c.value for c in Control)  # images as released, all black, or another item's


@cache
def _field_names(record_class: type) -> tuple[str, ...]:
    """A record class's field names in order (looked up once per class)."""
    return tuple(f.name for f in fields(record_class))


@dataclass
class ItemRecord:
    """One model answer to one item of one task variant."""

    output_type: str  # generate_until or multiple_choice
    item_uid: str
    task: str  # internal name
    trial_type: str
    seed: int  # option-order seed of the variant
    variant: str  # one of VARIANTS
    presented_order: list[int]  # letter position p showed canonical option presented_order[p]
    choice_letter: str | None  # parsed letter as presented; None when unparsed
    choice_index: int | None  # canonical index of the choice (0 = correct); None when unparsed
    correct: int  # 0/1 (unparsed = 0)
    parse_method: str  # the accepted form that read the answer (core.parsing.CONFIDENCE; docs/tasks.md) or none
    parse_confidence: float
    parser_version: str  # core.parsing.PARSER_VERSION of the parser that read it
    option_texts: list[str]  # text options in presented order as the parser saw them ([] for pictures and sliders)
    option_scores: list[float] | None  # canonical order, higher = preferred; None when the model gives none
    option_scores_kind: str | None  # logprob, neg_loss, similarity or None

    def as_dict(self) -> dict[str, Any]:
        """The record as written under RECORD_KEY (keys in field order), its lists copied: what `dataclasses.asdict`
        gives for these flat fields at a fraction of its cost (verify rebuilds a record per samples line)."""
        values = {name: getattr(self, name) for name in _field_names(type(self))}
        return {name: list(value) if isinstance(value, list) else value for name, value in values.items()}


@dataclass
class SliderRecord(ItemRecord):
    """A number-line slider answer: a position on the line, scored against the target within `tolerance`."""

    response_position: float | None  # the position as answered; None when unparsed
    response_value: float | None  # min + p * (max - min), p = the position clamped to [0, 1]
    range_min: float  # the number line's ends (what the position is read against)
    range_max: float
    target_value: float
    tolerance: float  # absolute: levante_tasks.schema.items.slider_tolerance(max)
    chance_level: float  # P(hit) of a uniformly random position: items.slider_chance (as the prepared item row)
