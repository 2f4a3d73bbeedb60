"""The task table of docs/tasks.md, rendered from the task catalogue so the docs never list tasks by hand.

    python -m levante_tasks.testing.task_docs          # rewrite the block between the markers in docs/tasks.md

tests/test_task_docs.py fails when the committed block is not what the catalogue renders now.
"""

from __future__ import annotations

import re
import sys

from levante_tasks.atomic import write_text
from levante_tasks.schema.task_source import PACKAGE_ROOT, TASKS_DIR
from levante_tasks.schema.tasks import TASKS, TaskInfo

DOC = PACKAGE_ROOT.parent / "docs" / "tasks.md"
BEGIN = "<!-- task-table:begin (generated: python -m levante_tasks.testing.task_docs) -->"
END = "<!-- task-table:end -->"


def _options(info: TaskInfo) -> str:
    """What a model chooses among, and the manifest quirk users meet in item uids."""
    kind = "pictures" if info.image_options else "text"
    slider = ", or a slider position" if info.slider_subtypes else ""
    repeated = "; repeated manifest uids become `<uid>__<k>`" if info.repeated_uids else ""
    return f"{kind}{slider}{repeated}"


def _subtypes(info: TaskInfo) -> str:
    """Each reported sub-type with the manifest trial types it pools; slider-only ones are generate_until only."""
    parts = [f"{name} ({' + '.join(types)}{'; generate_until only' if name in info.slider_subtypes else ''})"
             for name, types in info.subtypes]
    return ", ".join(parts) or "-"


def task_table(tasks: tuple[TaskInfo, ...] = TASKS) -> str:
    """The markdown table, one row per catalogue task, with each sub-type's `levante_acc_<sub-type>` metric."""
    folder = TASKS_DIR.relative_to(PACKAGE_ROOT.parent).as_posix()
    lines = ["| lmms-eval name | LEVANTE task | manifest task_id | options | sub-types (`levante_acc_<sub-type>`) "
             "| folder README |", "|---|---|---|---|---|---|"]
    lines += [f"| `{info.lmms_name}` | {info.name} | `{info.task_id}` | {_options(info)} | {_subtypes(info)} "
              f"| `{folder}/{info.folder}/README.md` |" for info in tasks]
    return "\n".join(lines) + "\n"


def with_table(text: str, table: str) -> str:
    """`text` with the block between the markers replaced by `table`; a doc without the markers is an error."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{DOC.name}: no task-table markers ({BEGIN} ... {END})")
    return pattern.sub(lambda _: f"{BEGIN}\n{table}{END}", text, count=1)


def main() -> int:
    """Rewrite docs/tasks.md's task table from the catalogue."""
    write_text(DOC, with_table(DOC.read_text(encoding="utf-8"), task_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
