"""Adding a task is one catalogue row plus its rules: `missing_for` lists what a row still lacks, file by file."""

from __future__ import annotations

import json

import pytest

from levante_tasks.data.items import ITEM_RULES, count_manifest_items
from levante_tasks.lmms.tasks import _generate_configs as generator
from levante_tasks.schema.tasks import TASKS, MissingTaskEntry, TaskInfo, stray_entries
from levante_tasks.synth.registry import SYNTH_TASKS, synth_task
from levante_tasks.testing.checklist import missing_for
from levante_tasks.testing.fixture_data import SPECS, fixture_spec

# A made-up row no real task will take (docs/new_task.md's example is another name).
PICTURE_MATCH = TaskInfo("checklist-probe", "probe", "levante_checklist_probe", image_options=True)


@pytest.mark.parametrize("info", TASKS, ids=[info.name for info in TASKS])
def test_every_catalogue_task_is_complete(info: TaskInfo) -> None:
    missing = missing_for(info)
    assert not missing, f"{info.name} still lacks:\n" + "\n".join(missing)


def test_per_task_tables_name_only_catalogue_tasks() -> None:
    assert [stray_entries(table) for table in (ITEM_RULES, SYNTH_TASKS, SPECS)] == [[], [], []]


def test_a_made_up_eighth_task_lists_every_missing_piece_with_its_file() -> None:
    missing = missing_for(PICTURE_MATCH)
    assert missing == [
        "levante_tasks/tasks/__init__.py: a line 'checklist_probe' in FOLDERS (the task registry)",
        "levante_tasks/tasks/checklist_probe/__init__.py: a `measures` description in the task's TaskInfo row",
        "levante_tasks/tasks/checklist_probe/items.py: RULES = ItemRules(...) (item rules; ItemRules() if none)",
        "levante_tasks/tasks/checklist_probe/synth.py: SYNTH = SynthTask(...) (synthetic item builder)",
        "levante_tasks/tasks/checklist_probe/fixture.py: SPEC = FixtureSpec(...) (fixture spec)",
        "levante_tasks/lmms/tasks/_item_counts.json: item counts of 'checklist-probe' (rerun "
        "`python -m levante_tasks.lmms.tasks._generate_configs --manifest <release>/manifest.csv` on a manifest "
        "with the task)",
        "levante_tasks/lmms/tasks/checklist_probe/: the generated YAML folder "
        "(run `python -m levante_tasks.lmms.tasks._generate_configs`)",
        "levante_tasks/lmms/tasks/checklist_probe/README.md: the generated README missing or stale "
        "(run `python -m levante_tasks.lmms.tasks._generate_configs`)",
        "docs/tasks.md: a row `| `levante_checklist_probe` | ...` in the task table",
    ]


def test_a_missing_table_entry_is_one_sentence_naming_the_file() -> None:
    with pytest.raises(MissingTaskEntry) as synth:
        synth_task(PICTURE_MATCH)
    assert str(synth.value) == ("task 'checklist-probe' has no synthetic builder: add it in "
                                "levante_tasks/tasks/checklist_probe/synth.py (docs/new_task.md)")
    with pytest.raises(MissingTaskEntry, match="levante_tasks/tasks/checklist_probe/fixture.py"):
        fixture_spec(PICTURE_MATCH)


def test_committed_item_counts_match_the_shared_manifest(sample_base) -> None:
    """The READMEs' counts (`_item_counts.json`) are those of the real LEVANTE manifest snapshot."""
    committed = json.loads((generator.TASKS_DIR / generator.COUNTS_FILE).read_text(encoding="utf-8"))
    manifest = sample_base / committed["manifest"]["version"] / "manifest.csv"
    if not manifest.is_file():
        pytest.skip(f"the counts are of manifest {committed['manifest']['version']}, not in the shared sample")
    assert count_manifest_items(manifest) == committed
    assert committed["tasks"]["vocab"]["items"] == 170 and committed["tasks"]["theory-of-mind"]["items"] == 31
    assert set(committed["tasks"]) == {info.name for info in TASKS}
