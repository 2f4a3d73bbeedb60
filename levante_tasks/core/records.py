"""Per-item records (`levante_tasks.schema.records`), written under `levante_item` in lmms-eval's samples files.

Everything is stored in canonical option order (index 0 = the correct answer) next to the presented order,
so records can be joined with children's responses without knowing how options were shown. Each record names
the parser version (with the item's locale part for a translated item: `parsing.grammar_version`) and holds the
parser's other inputs (option texts, slider range), for `core.reparse`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks.core.locale_text import item_locale
from levante_tasks.core.parsing import CONFIDENCE, Parsed, grammar_version, scored
from levante_tasks.schema.items import slider_chance, slider_tolerance
from levante_tasks.schema.records import ItemRecord, SliderRecord


def _identity(doc: Mapping[str, Any], output_type: str) -> dict[str, Any]:
    return {
        "output_type": output_type,
        "item_uid": doc["item_uid"],
        "task": doc["task"],
        "trial_type": doc["trial_type"],
        "seed": int(doc["seed"]),
        "variant": doc["variant"],
        "presented_order": [int(i) for i in doc["presented_order"]],
    }


def to_canonical(doc: Mapping[str, Any], by_position: Sequence[float]) -> list[float]:
    """Reorder per-position values (A, B, ...) into canonical order."""
    canonical = [0.0] * len(by_position)
    for position, index in enumerate(doc["presented_order"]):
        canonical[index] = float(by_position[position])
    return canonical


def choice_record(doc: Mapping[str, Any], parsed: Parsed, output_type: str = "generate_until",
                  option_texts: Sequence[str] = ()) -> dict[str, Any]:
    """Record of a choice item answered by a parsed letter (optionally with per-letter scores); `option_texts` are
    the text options in presented order the parser was given."""
    letters = list(doc["letters"])
    index = doc["presented_order"][letters.index(parsed.letter)] if parsed.letter else None
    scores = None
    if parsed.scores is not None:
        scores = to_canonical(doc, [parsed.scores[letter] for letter in letters])
    return ItemRecord(
        **_identity(doc, output_type),
        choice_letter=parsed.letter,
        choice_index=None if index is None else int(index),
        correct=int(index == 0),
        parse_method=parsed.method,
        parse_confidence=parsed.confidence,
        parser_version=grammar_version(item_locale(doc)),
        option_texts=[str(text) for text in option_texts],
        option_scores=scores,
        option_scores_kind=parsed.scores_kind if scores is not None else None,
    ).as_dict()


def option_loss(result: Any) -> float:
    """The loss of one multiple_choice option: (loss, greedy), its stringified form from unpatched 0.7.x, or the
    `["loss", "greedy"]` strings of a saved samples line."""
    if isinstance(result, str):
        result = ast.literal_eval(result)
    if isinstance(result, tuple | list):
        result = result[0]
    return float(result)


def loss_record(doc: Mapping[str, Any], losses: Sequence[float]) -> dict[str, Any]:
    """Record of a multiple_choice item: one loss per presented option, lower = better (argmin; a tie is unparsed)."""
    scores = {k: -float(v) for k, v in zip(doc["letters"], losses, strict=True)}
    return choice_record(doc, scored(doc["letters"], scores, "neg_loss"), output_type="multiple_choice")


def slider_record(doc: Mapping[str, Any], position: float | None, method: str) -> dict[str, Any]:
    """Record of a number-line slider item: position in [0, 1] (clamped) -> value; correct within tolerance."""
    lo, hi, target = float(doc["range_min"]), float(doc["range_max"]), float(doc["answer"])
    tolerance = slider_tolerance(hi)
    value = None if position is None else lo + min(max(position, 0.0), 1.0) * (hi - lo)
    return SliderRecord(
        **_identity(doc, "generate_until"),
        choice_letter=None,
        choice_index=None,
        correct=int(value is not None and abs(value - target) < tolerance),
        parse_method=method,
        parse_confidence=CONFIDENCE.get(method, 0.0),
        parser_version=grammar_version(item_locale(doc)),
        option_texts=[],
        option_scores=None,
        option_scores_kind=None,
        response_position=position,
        response_value=value,
        range_min=lo,
        range_max=hi,
        target_value=target,
        tolerance=tolerance,
        chance_level=slider_chance(target, lo, hi),
    ).as_dict()
