"""The docs list tasks only where the catalogue writes or checks them: docs/tasks.md's generated task table, and the
synthetic release's item table in docs/synth.md (catalogue tasks only)."""

from __future__ import annotations

from levante_tasks.lmms import generate as generator
from levante_tasks.schema.tasks import TASKS, TaskInfo

DOCS = generator.DOCS_TASKS.parent


def test_the_task_table_in_docs_is_what_the_catalogue_renders() -> None:
    text = generator.DOCS_TASKS.read_text(encoding="utf-8")
    assert generator.with_docs_table(text, generator.docs_table()) == text, (
        "docs/tasks.md's task table is stale: run `python -m levante_tasks.lmms.generate`")


def test_the_table_has_one_row_per_catalogue_task_and_follows_a_new_one() -> None:
    rows = generator.docs_table().splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{info.lmms_name}`" for info in TASKS]
    probe = TaskInfo("picture-probe", "probe", "levante_picture_probe", image_options=True)
    text = generator.DOCS_TASKS.read_text(encoding="utf-8")
    assert generator.with_docs_table(text, generator.docs_table((*TASKS, probe))) != text
    assert "| `levante_picture_probe` | picture-probe | `probe` | pictures | - |" in generator.docs_table((probe,))


def test_the_synthetic_item_table_names_only_catalogue_tasks() -> None:
    """docs/synth.md describes each synthetic builder by hand; a renamed or removed task must not linger there."""
    text = (DOCS / "synth.md").read_text(encoding="utf-8")
    table = text[text.index("| task | rows | scored | what |"):].split("\n\n", 1)[0]
    rows = [row.split(" | ")[0].removeprefix("| ") for row in table.splitlines()[2:]]
    assert rows and set(rows) <= {info.name for info in TASKS}
