"""The record scorer: reads the answer with our parser and stores the same per-item record as the lmms-eval tasks.

The answer read is the model's §3c JSON (docs/design.md) when its output carries one under `output.metadata`
(`ANSWER_KEY`, scoring models that expose per-option scores), else the completion ("ANSWER: B", JSON, prose).
The record (`levante_tasks.core.records.choice_record`) is the Score's metadata under `RECORD_KEY`.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from levante_tasks.core.hooks import option_texts
from levante_tasks.core.locale_text import item_locale
from levante_tasks.core.parsing import parse_choice
from levante_tasks.core.records import choice_record
from levante_tasks.schema.records import RECORD_KEY

ANSWER_KEY = "levante_answer"  # output.metadata key of a model's §3c JSON answer (letter + per-letter scores)


def answer_text(output: Any) -> str:
    """What the parser reads of a ModelOutput (live or from a log): the model's §3c JSON when it gave one, else the
    completion."""
    extra = output.metadata or {}
    value = extra.get(ANSWER_KEY)
    return value if isinstance(value, str) else output.completion


def score_of(record: dict[str, Any]) -> Score:
    """The levante_record Score of one record (the scorer's and `rescore`'s)."""
    return Score(value=CORRECT if record["correct"] else INCORRECT, answer=record["choice_letter"],
                 explanation=f"parse_method={record['parse_method']}", metadata={RECORD_KEY: record})


@scorer(metrics=[accuracy(), stderr()])
def levante_record():
    """Score with our answer parser (in the sample's locale); the per-item record goes under `levante_item` in the
    score's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        doc = state.metadata
        options = option_texts(doc)
        parsed = parse_choice(answer_text(state.output), doc["letters"], options, item_locale(doc))
        return score_of(choice_record(doc, parsed, option_texts=options))

    return score
