"""What a catalogue row still lacks: every file and table entry a LEVANTE task needs besides its `TaskInfo`.

`missing_for(info)` returns one line per missing piece, each naming the file to edit (paths relative to the
repository root), so a new row's test failure is the to-do list of docs/new_task.md. tests/test_new_task.py
asserts it is empty for every real row. It lives with the test helpers because it reads the fixture specs; the
docs check reads docs/tasks.md from a source checkout.
"""

from __future__ import annotations

from pathlib import Path

from levante_tasks.data.items import ITEM_RULES, RULES_MODULE
from levante_tasks.lmms import generate as generator
from levante_tasks.schema.task_source import PACKAGE_ROOT, TASKS_DIR
from levante_tasks.schema.tasks import TASKS, TaskInfo
from levante_tasks.synth.registry import SYNTH_MODULE, SYNTH_TASKS
from levante_tasks.tasks import FOLDERS, piece_file
from levante_tasks.testing.fixture_data import SPEC_MODULE, SPECS

REPO_ROOT = PACKAGE_ROOT.parent
TASKS_REL = "levante_tasks/tasks"  # TASKS_DIR as the repository path messages name
GENERATOR = "python -m levante_tasks.lmms.generate"
REGISTRY_FILE = f"{TASKS_REL}/__init__.py"


def docs_row(info: TaskInfo) -> str:
    """The start of the task's row in docs/tasks.md's task table."""
    return f"| `{info.lmms_name}` |"


def generated_missing(info: TaskInfo, counts: dict) -> list[str]:
    """The generated lmms-eval YAMLs and README of `info`'s folder that are missing or differ from what the generator
    renders now (`counts`: `load_counts()`); the generator renders catalogue tasks only, so an unregistered row lacks
    them all."""
    if info not in TASKS:
        return [f"{TASKS_REL}/{info.folder}/: its generated lmms-eval YAMLs and README (add the registry line, then "
                f"run `{GENERATOR}`)"]
    readme = f"{info.folder}/README.md"
    stale = sorted(rel for rel, text in generator.task_files(info, counts).items()
                   if not (TASKS_DIR / rel).is_file() or (TASKS_DIR / rel).read_text(encoding="utf-8") != text)
    yamls = [rel for rel in stale if rel != readme]
    missing = [f"{TASKS_REL}/{info.folder}/: {len(yamls)} generated lmms-eval YAML(s) missing or stale, e.g. "
               f"{yamls[0].split('/')[-1]} (run `{GENERATOR}`)"] if yamls else []
    if readme in stale:
        missing.append(f"{TASKS_REL}/{readme}: the generated README missing or stale (run `{GENERATOR}`)")
    return missing


def missing_for(info: TaskInfo, repo_root: Path = REPO_ROOT) -> list[str]:
    """Every piece `info` lacks, as `<file>: <what to add>` lines (empty when the task is complete).

    Checked: its line in the task registry (`levante_tasks/tasks/__init__.py`); the `measures` text of the row; its
    folder's item rules (`items.py` `RULES`), synthetic builder (`synth.py` `SYNTH`), fixture spec (`fixture.py`
    `SPEC`), item counts (`item_counts.json`), generated lmms-eval YAMLs (every variant and group, byte-equal to
    what the generator renders now) and README, all in `levante_tasks/tasks/<folder>/`; its row in docs/tasks.md's
    task table (the generator writes it).
    """
    missing = []
    if info.folder not in FOLDERS:
        missing.append(f"{REGISTRY_FILE}: a line {info.folder!r} in FOLDERS (the task registry)")
    if not info.measures.strip():
        missing.append(f"{piece_file(info.folder, '__init__')}: a `measures` description in the task's TaskInfo row")
    for table, module, what in ((ITEM_RULES, RULES_MODULE, "RULES = ItemRules(...) (item rules; ItemRules() if none)"),
                                (SYNTH_TASKS, SYNTH_MODULE, "SYNTH = SynthTask(...) (synthetic item builder)"),
                                (SPECS, SPEC_MODULE, "SPEC = FixtureSpec(...) (fixture spec)")):
        if info.name not in table:
            missing.append(f"{piece_file(info.folder, module)}: {what}")
    counts = generator.load_counts()
    if info.name not in counts:
        missing.append(f"{TASKS_REL}/{info.folder}/{generator.COUNTS_FILE}: its item counts "
                       f"(run `{GENERATOR} --manifest <release>/manifest.csv` on a manifest with the task)")
    missing += generated_missing(info, counts)
    docs = repo_root / "docs" / "tasks.md"
    if not docs.is_file() or docs_row(info) not in docs.read_text(encoding="utf-8"):
        missing.append(f"docs/tasks.md: a row `{docs_row(info)} ...` in the task table")
    return missing

