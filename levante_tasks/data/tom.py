"""Theory-of-mind items from the real corpus: the story is the block's instruction rows before the question.

The corpus (`corpus/theory-of-mind/theory-of-mind-item-bank.csv`) lists, per `block_index`, `instructions` rows
carrying the story sentences and `test_response` rows carrying the questions, in presentation order. A question's
story is every instruction sentence of its block that precedes it (block transitions such as "Nice work! Here is
a new story." have no `item` and are not story). Hostile-attribution rows (`task` = hostile-attribution) have no
normative answer and are kept out of the scored task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from levante_tasks.data.csvfile import read_csv_rows
from levante_tasks.errors import LevanteError
from levante_tasks.schema import layout

CORPUS_RELPATH = f"{layout.CORPUS_DIR}/theory-of-mind/theory-of-mind-item-bank.csv"
CORPUS_COLUMNS = ("block_index", "task", "trial_type", "assessment_stage", "prompt", "item", "answer",
                  "response_alternatives")


@dataclass(frozen=True)
class TomQuestion:
    """One test_response row of the corpus with its assembled story."""

    corpus_row: int
    block: str
    task: str
    trial_type: str
    question: str
    story: str
    answer: str
    alternatives: tuple[str, ...]
    item_id: str
    story_ids: tuple[str, ...] = ()  # item_id of each story sentence, in order (its translation table rows)


def clean_text(text: str) -> str:
    """Collapse whitespace (the corpus has trailing spaces and doubled blanks)."""
    return re.sub(r"\s+", " ", text).strip()


def read_tom_corpus(path: Path) -> list[TomQuestion]:
    """All questions of the ToM corpus in file order, each with the story text that precedes it in its block.

    Raises LevanteError with one line naming the corpus file when it is missing, unreadable, not UTF-8, not a
    CSV, empty, lacks columns, or has a row whose cell count differs from the header.
    """
    header, cells = read_csv_rows(path, CORPUS_RELPATH,
                                  f"{CORPUS_RELPATH}: missing from the release (needed for theory-of-mind)")
    missing = [c for c in CORPUS_COLUMNS if c not in header]
    if missing:
        raise LevanteError(f"{CORPUS_RELPATH}: missing columns: {', '.join(missing)}")
    for index, row_cells in enumerate(cells, start=1):
        if len(row_cells) != len(header):
            raise LevanteError(f"{CORPUS_RELPATH}:{index}: row has {len(row_cells)} cells, the header has "
                               f"{len(header)}")
    rows = [dict(zip(header, row_cells, strict=True)) for row_cells in cells]
    questions: list[TomQuestion] = []
    story: list[str] = []
    story_ids: list[str] = []
    block = None
    for index, row in enumerate(rows, start=1):
        if row["block_index"] != block:
            block, story, story_ids = row["block_index"], [], []
        text = clean_text(row["prompt"] or "")
        if row["assessment_stage"] == "instructions" or row["trial_type"] == "instructions":
            if (row.get("item") or "").strip() and text:
                story.append(text)
                story_ids.append((row.get("item_id") or "").strip())
            continue
        alternatives = tuple(a.strip() for a in (row["response_alternatives"] or "").split(",") if a.strip())
        questions.append(TomQuestion(
            corpus_row=index,
            block=row["block_index"],
            task=row["task"],
            trial_type=row["trial_type"],
            question=text,
            story=" ".join(story),
            answer=(row["answer"] or "").strip(),
            alternatives=alternatives,
            item_id=(row.get("item_id") or "").strip(),
            story_ids=tuple(story_ids),
        ))
    return questions


def align_with_manifest(questions: list[TomQuestion], manifest_rows: list) -> dict[str, TomQuestion]:
    """Pair manifest ToM rows with corpus questions: same order, same answer, same question text.

    Returns item_uid -> question. A manifest row that does not match the next unused corpus question with the
    same answer and question text is left out (the caller reports it).
    """
    pairs: dict[str, TomQuestion] = {}
    remaining = list(questions)
    for row in manifest_rows:
        question_text = clean_text(row.get("prompt")).lower()
        for position, question in enumerate(remaining):
            if question.answer == row.get("answer") and question.question.lower() == question_text:
                pairs[row.item_uid] = question
                del remaining[: position + 1]
                break
    return pairs
