"""Read and check `manifest.csv` of a LEVANTE release (the columns of the published bucket manifest)."""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from levante_tasks.data.csvfile import read_csv_rows, shown
from levante_tasks.data.problems import NO_TASK, Problem, ProblemLog
from levante_tasks.schema.tasks import BY_NAME

MANIFEST_COLUMNS = (
    "task",
    "task_id",
    "item_uid",
    "trial_type",
    "prompt",
    "item",
    "answer",
    "response_alternatives",
    "chance_level",
    "prompt_phrase",
    "prompt_image",
    "full_prompt",
)

MISSING = {"", "NA"}

# Cells that are identifiers or keys: a control or invisible character there is never intended (and a newline
# would split the one-line messages that quote them).
ID_COLUMNS = ("task", "task_id", "item_uid", "trial_type", "answer", "response_alternatives", "prompt_image")
INVISIBLE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}


@dataclass(frozen=True)
class ManifestRow:
    """One manifest row with `NA` turned into "" and its 1-based data-row number kept for messages."""

    row: int
    values: dict[str, str]

    def get(self, column: str) -> str:
        """The cell, stripped, with `NA`/empty as ""."""
        value = self.values.get(column, "").strip()
        return "" if value in MISSING else value

    @property
    def task(self) -> str:
        return self.get("task")

    @property
    def item_uid(self) -> str:
        return self.get("item_uid")

    def options(self) -> list[str]:
        """Canonical option order: the answer first, then the distractors as listed (empty if no answer)."""
        answer = self.get("answer")
        if not answer:
            return []
        alternatives = [alt.strip() for alt in self.get("response_alternatives").split(",") if alt.strip()]
        return [answer, *alternatives]


@dataclass
class Manifest:
    """The usable rows of a manifest, how many rows repeated an earlier one exactly, and rows per task."""

    rows: list[ManifestRow] = field(default_factory=list)
    exact_duplicates: int = 0
    rows_by_task: Counter = field(default_factory=Counter)


def invisible_character(text: str) -> str | None:
    """`U+XXXX` of the first control, format (zero-width, BOM) or line-separator character in `text`, else None."""
    for char in text:
        if unicodedata.category(char) in INVISIBLE_CATEGORIES:
            return f"U+{ord(char):04X}"
    return None


def _header_problems(header: list[str], display_name: str) -> list[Problem]:
    missing = [c for c in MANIFEST_COLUMNS if c not in header]
    extra = [shown(c) for c in header if c not in MANIFEST_COLUMNS]
    repeated = sorted({shown(c) for c in header if header.count(c) > 1})
    problems = []
    if missing:
        problems.append(Problem(display_name, "missing_columns", f"missing columns: {', '.join(missing)}"))
    if extra:
        problems.append(Problem(display_name, "extra_columns", f"unexpected columns: {', '.join(extra)}"))
    if repeated:
        problems.append(Problem(display_name, "repeated_columns", f"repeated columns: {', '.join(repeated)}"))
    return problems


def _row_problem(display_name: str, index: int, task: str, kind: str, message: str) -> Problem:
    """A problem of a row whose item_uid cannot be trusted: the row is named by its number."""
    return Problem(display_name, kind, message, row=index, item_uid=f"row{index}",
                   task=task if task in BY_NAME else NO_TASK)


def load_manifest(path: Path, log: ProblemLog, display_name: str = "manifest.csv") -> Manifest:
    """Read and check the manifest; problems go to `log`, exact duplicate rows are counted and skipped.

    The file itself being unreadable (missing, not UTF-8, broken CSV, empty) raises LevanteError (one line).
    """
    header, raw_rows = read_csv_rows(path, display_name, f"{display_name}: missing from the release")
    header_problems = _header_problems(header, display_name)
    for problem in header_problems:
        log.add(problem)
    if header_problems:
        return Manifest()
    if not raw_rows:
        log.add(Problem(display_name, "no_rows", "no rows below the header"))
        return Manifest()
    manifest = Manifest()
    seen: set[tuple[str, ...]] = set()
    for index, cells in enumerate(raw_rows, start=1):
        task_cell = cells[0].strip() if cells else ""
        if len(cells) != len(header):
            manifest.rows_by_task[task_cell] += 1
            log.add(_row_problem(display_name, index, task_cell, "malformed_row",
                                 f"row has {len(cells)} cells, the header has {len(header)}"))
            continue
        row = ManifestRow(index, dict(zip(header, cells, strict=True)))
        key = tuple(row.values[c] for c in MANIFEST_COLUMNS)
        if key in seen:
            manifest.exact_duplicates += 1  # 13 in mental-rotation, 7 in egma-math in 2026-03-24: one item
            continue
        seen.add(key)
        manifest.rows_by_task[row.task] += 1
        bad_cells = [(c, invisible_character(row.values[c])) for c in ID_COLUMNS]
        bad_cells = [(c, code) for c, code in bad_cells if code]
        for column, code in bad_cells:
            log.add(_row_problem(display_name, index, row.task, "invisible_character",
                                 f"column {column} contains an invisible or control character ({code})"))
        if bad_cells:
            continue
        if row.task not in BY_NAME:
            log.add(Problem(display_name, "unknown_task", f"{row.item_uid}: unknown task {row.task!r}", row=index,
                            item_uid=row.item_uid or f"row{index}", task=row.task))
            continue
        if not row.item_uid:
            log.add(Problem(display_name, "missing_item_uid", "empty item_uid", row=index, item_uid=f"row{index}",
                            task=row.task))
            continue
        manifest.rows.append(row)
    return manifest


def read_manifest(path: Path, log: ProblemLog, display_name: str = "manifest.csv") -> list[ManifestRow]:
    """The usable rows of the manifest (see `load_manifest`)."""
    return load_manifest(path, log, display_name).rows
