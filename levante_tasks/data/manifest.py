"""Read and check `manifest.csv` of a LEVANTE release (docs/levante.md §2)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from levante_tasks.data.problems import Problem, ProblemLog
from levante_tasks.errors import LevanteError

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

# internal_name -> LEVANTE task_id
TASK_IDS = {
    "vocab": "vocab",
    "trog": "trog",
    "egma-math": "math",
    "theory-of-mind": "tom",
    "matrix-reasoning": "matrix",
    "mental-rotation": "mrot",
    "same-different-selection": "sds",
}

# Tasks whose manifest repeats one item_uid for distinct trials by design (rlevante rebuilds their uids).
REPEATED_UID_TASKS = {"same-different-selection"}

MISSING = {"", "NA"}


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


def read_manifest(path: Path, log: ProblemLog, display_name: str = "manifest.csv") -> list[ManifestRow]:
    """Read the manifest; wrong columns and unknown tasks are recorded in `log`, exact duplicate rows removed."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            raw_rows = list(reader)
    except FileNotFoundError as exc:
        raise LevanteError(f"{display_name}: missing from the release") from exc
    except (UnicodeDecodeError, csv.Error) as exc:
        raise LevanteError(f"{display_name}: not a readable CSV ({exc})") from exc
    missing = [c for c in MANIFEST_COLUMNS if c not in header]
    extra = [c for c in header if c not in MANIFEST_COLUMNS]
    if missing:
        log.add(Problem(display_name, "missing_columns", f"missing columns: {', '.join(missing)}"))
    if extra:
        log.add(Problem(display_name, "extra_columns", f"unexpected columns: {', '.join(extra)}"))
    if missing or extra:
        return []
    rows: list[ManifestRow] = []
    seen: set[tuple[str, ...]] = set()
    for index, raw in enumerate(raw_rows, start=1):
        if None in raw:
            log.add(Problem(display_name, "malformed_row", "row has more cells than the header", row=index,
                            item_uid=(raw.get("item_uid") or f"row{index}")))
            continue
        row = ManifestRow(index, {k: (v or "") for k, v in raw.items()})
        key = tuple(row.values[c] for c in MANIFEST_COLUMNS)
        if key in seen:
            continue  # exact duplicate row (13 in mental-rotation, 9 in egma-math in 2026-03-24): one item
        seen.add(key)
        if row.task not in TASK_IDS:
            log.add(Problem(display_name, "unknown_task", f"{row.item_uid}: unknown task {row.task!r}", row=index,
                            item_uid=row.item_uid or f"row{index}", task=row.task))
            continue
        if not row.item_uid:
            log.add(Problem(display_name, "missing_item_uid", "empty item_uid", row=index, item_uid=f"row{index}",
                            task=row.task))
            continue
        rows.append(row)
    return rows


def count_exact_duplicates(path: Path) -> int:
    """How many rows of the manifest repeat an earlier row exactly (reported, not an error)."""
    with open(path, newline="", encoding="utf-8") as handle:
        lines = [tuple(r) for r in csv.reader(handle)][1:]
    return len(lines) - len(set(lines))
