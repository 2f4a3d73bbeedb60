"""Validation problems: one line each, naming the file (and row) and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

NO_TASK = "(no task)"  # task of a dropped row whose task cell is unusable (malformed row, invisible characters)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a release; `item_uid` is empty for file-level problems (always fatal)."""

    file: str
    kind: str
    message: str
    row: int | None = None
    item_uid: str = ""
    task: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.row}" if self.row is not None else self.file
        return f"{where}: {self.message}"


@dataclass
class ProblemLog:
    """Collects problems while a release is read; item problems mark items to drop (lenient) or fail (strict)."""

    problems: list[Problem] = field(default_factory=list)

    def add(self, problem: Problem) -> None:
        """Record one problem."""
        self.problems.append(problem)

    def file_problems(self) -> list[Problem]:
        """Problems that concern a whole file: fatal in every mode."""
        return [p for p in self.problems if not p.item_uid]

    def item_problems(self) -> list[Problem]:
        """Problems tied to one item: fatal in strict mode, the item is dropped in lenient mode."""
        return [p for p in self.problems if p.item_uid]

    def dropped_rows_by_task(self) -> dict[str, dict[str, int]]:
        """Rows dropped in lenient mode: per task, per problem kind, each row counted once per kind."""
        seen = {(p.task, p.kind, p.row) for p in self.item_problems()}
        counts: dict[str, dict[str, int]] = {}
        for task, kind, _row in sorted(seen, key=str):
            counts.setdefault(task, {}).setdefault(kind, 0)
            counts[task][kind] += 1
        return counts
