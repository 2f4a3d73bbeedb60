"""The docs list tasks only where the catalogue writes or checks them: docs/tasks.md's generated task table, and the
synthetic release's item table in docs/synth.md (catalogue tasks only)."""

from __future__ import annotations

from levante_tasks.schema.tasks import TASKS, TaskInfo
from levante_tasks.testing import task_docs

DOCS = task_docs.DOC.parent


def test_the_task_table_in_docs_is_what_the_catalogue_renders() -> None:
    text = task_docs.DOC.read_text(encoding="utf-8")
    assert task_docs.with_table(text, task_docs.task_table()) == text, (
        "docs/tasks.md's task table is stale: run `python -m levante_tasks.testing.task_docs`")


def test_the_table_has_one_row_per_catalogue_task_and_follows_a_new_one() -> None:
    rows = task_docs.task_table().splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{info.lmms_name}`" for info in TASKS]
    probe = TaskInfo("picture-probe", "probe", "levante_picture_probe", image_options=True)
    assert task_docs.with_table(task_docs.DOC.read_text(encoding="utf-8"), task_docs.task_table((*TASKS, probe))) \
        != task_docs.DOC.read_text(encoding="utf-8")
    assert "| `levante_picture_probe` | picture-probe | `probe` | pictures | - |" in task_docs.task_table((probe,))


def test_the_synthetic_item_table_names_only_catalogue_tasks() -> None:
    """docs/synth.md describes each synthetic builder by hand; a renamed or removed task must not linger there."""
    text = (DOCS / "synth.md").read_text(encoding="utf-8")
    table = text[text.index("| task | rows | scored | what |"):].split("\n\n", 1)[0]
    rows = [row.split(" | ")[0].removeprefix("| ") for row in table.splitlines()[2:]]
    assert rows and set(rows) <= {info.name for info in TASKS}
