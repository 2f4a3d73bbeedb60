"""Adding a task is one folder plus one registry line: `missing_for` lists what a task still lacks, file by file."""

from __future__ import annotations

from pathlib import Path

import pytest

from levante_tasks import tasks as registry
from levante_tasks.data.items import ITEM_RULES, count_manifest_items
from levante_tasks.lmms import generate as generator
from levante_tasks.schema.tasks import TASKS, MissingTaskEntry, TaskInfo, stray_entries, task_info
from levante_tasks.synth.registry import SYNTH_TASKS, synth_task
from levante_tasks.testing import checklist
from levante_tasks.testing.checklist import missing_for
from levante_tasks.testing.fixture_data import SPECS, fixture_spec

# A made-up row no real task will take (docs/new_task.md's example is another name).
PICTURE_MATCH = TaskInfo("checklist-probe", "probe", "levante_checklist_probe", image_options=True)


@pytest.mark.parametrize("info", TASKS, ids=[info.name for info in TASKS])
def test_every_catalogue_task_is_complete(info: TaskInfo) -> None:
    missing = missing_for(info)
    assert not missing, f"{info.name} still lacks:\n" + "\n".join(missing)


def test_every_task_folder_is_registered() -> None:
    """A task folder without its registry line would be silently left out of every table and group."""
    folders = {path.parent.name for path in Path(registry.__file__).parent.glob("*/__init__.py")}
    assert sorted(folders - set(registry.FOLDERS)) == [], "add these to FOLDERS in levante_tasks/tasks/__init__.py"
    assert [info.folder for info in TASKS] == list(registry.FOLDERS)


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
        "levante_tasks/tasks/checklist_probe/item_counts.json: its item counts (run "
        "`python -m levante_tasks.lmms.generate --manifest <release>/manifest.csv` on a manifest with the task)",
        "levante_tasks/tasks/checklist_probe/: its generated lmms-eval YAMLs and README (add the registry line, "
        "then run `python -m levante_tasks.lmms.generate`)",
        "docs/tasks.md: a row `| `levante_checklist_probe` | ...` in the task table",
    ]


def test_a_registered_task_without_its_generated_files_is_told_to_run_the_generator(tmp_path, monkeypatch) -> None:
    """docs/new_task.md's checklist example: a registered row whose folder lacks the generated YAMLs and README."""
    monkeypatch.setattr(checklist, "TASKS_DIR", tmp_path)  # a task root holding none of trog's generated files
    assert missing_for(task_info("trog")) == [
        f"levante_tasks/tasks/trog/: {len(generator.variants('trog')) + 2} generated lmms-eval YAML(s) missing or "
        "stale, e.g. levante_trog.yaml "
        "(run `python -m levante_tasks.lmms.generate`)",
        "levante_tasks/tasks/trog/README.md: the generated README missing or stale "
        "(run `python -m levante_tasks.lmms.generate`)",
    ]


def test_a_missing_table_entry_is_one_sentence_naming_the_file() -> None:
    with pytest.raises(MissingTaskEntry) as synth:
        synth_task(PICTURE_MATCH)
    assert str(synth.value) == ("task 'checklist-probe' has no synthetic builder: add it in "
                                "levante_tasks/tasks/checklist_probe/synth.py (docs/new_task.md)")
    with pytest.raises(MissingTaskEntry, match="levante_tasks/tasks/checklist_probe/fixture.py"):
        fixture_spec(PICTURE_MATCH)


def test_committed_item_counts_match_the_manifests_they_name(sample_base) -> None:
    """Each task folder's item counts (`item_counts.json`, the README's counts) are those of the manifest they name,
    for every manifest the shared sample holds, and every catalogue task such a manifest holds has its counts from
    it (a task absent from the sample names another manifest, e.g. a newer release's)."""
    committed = generator.load_counts()
    assert set(committed) == {info.name for info in TASKS}
    by_version: dict[str, list[str]] = {}
    for name, document in committed.items():
        by_version.setdefault(document["manifest"]["version"], []).append(name)
    found = {version: sample_base / version / "manifest.csv" for version in by_version}
    if not any(path.is_file() for path in found.values()):
        pytest.skip(f"the counts are of manifests {sorted(by_version)}, none in the shared sample")
    for version, path in found.items():
        if path.is_file():
            counted = count_manifest_items(path)
            assert sorted(counted["tasks"]) == sorted(by_version[version]), version
            assert {name: committed[name] for name in by_version[version]} == {
                name: {"manifest": counted["manifest"], "counts": entry} for name, entry in counted["tasks"].items()}
    if committed["vocab"]["manifest"]["version"] == "2026-03-24":
        assert committed["vocab"]["counts"]["items"] == 170 and committed["theory-of-mind"]["counts"]["items"] == 31


def test_the_generator_refuses_an_unknown_task_and_an_unreadable_manifest(tmp_path, capsys) -> None:
    """Bad input to the counts refresh is one line naming it and exit 2, before any file is written."""
    with pytest.raises(SystemExit) as unknown:
        generator.main(["--manifest", str(tmp_path / "manifest.csv"), "--task", "no-such-task"])
    assert unknown.value.code == 2 and "--task no-such-task: not a catalogue task" in capsys.readouterr().err
    bad = tmp_path / "manifest.csv"
    bad.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(SystemExit) as unreadable:
        generator.main(["--manifest", str(bad)])
    err = capsys.readouterr().err
    assert unreadable.value.code == 2 and "error: manifest.csv: missing columns: task," in err
