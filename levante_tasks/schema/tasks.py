"""The task catalogue: each LEVANTE task's names in the release, the manifest, lmms-eval and this package.

Task versions (`TaskInfo.version`, like inspect_evals' `eval.yaml` version): a whole number a person bumps, per task,
when a change alters what a model is shown or how a response is scored or recorded: the prompt text, the option
orders (or their seeds), the controls (blank and shuffled images), the answer parsing, or the per-item records. A
refactor, a reworded error message or a harness change that leaves all of these as they were keeps the version.
Results carry it (lmms-eval's `versions` and `metadata.version`, inspect's task version, and the run provenance's
`task_version`); results of different versions are never pooled: `levante-tasks summarize` refuses to average them
into one cell and `verify` reports a recorded version that is not the installed one. The task source hash
(`schema.task_source`) stays as audit evidence of the exact code, not as the version.

Each task lives in one folder, `levante_tasks/tasks/<folder>/`, listed in the registry (`levante_tasks.tasks`): its
row (`TaskInfo`, defined in `schema.task_info`) and the pieces each layer gathers from the folders and looks up by
row (`entry_for`): item rules (`levante_tasks.data.items`), the synthetic builder (`levante_tasks.synth.registry`),
the fixture spec (`levante_tasks.testing.fixture_data`); the generated lmms-eval folder and README.
`levante_tasks.testing.checklist.missing_for` names what a folder still lacks; docs/new_task.md lists the steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from levante_tasks.schema.task_info import TaskInfo
from levante_tasks.tasks import rows

T = TypeVar("T")


TASKS: tuple[TaskInfo, ...] = rows()  # one row per registered task folder, in registry order
BY_NAME = {info.name: info for info in TASKS}


def task_info(name: str) -> TaskInfo:
    """The catalogue row of an internal task name (KeyError names the unknown task)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown LEVANTE task {name!r}; known: {', '.join(BY_NAME)}") from None


class MissingTaskEntry(KeyError):
    """A catalogue row has no entry in a per-task table; the message names the task, the table and its file."""

    def __str__(self) -> str:  # KeyError quotes its argument; this message is a sentence
        return str(self.args[0])


def entry_for(table: Mapping[str, T], info: TaskInfo, what: str, where: str) -> T:
    """The entry of catalogue row `info` in a per-task `table` keyed by `TaskInfo.name`.

    Per-task tables (item rules, synthetic builders, fixture specs, each gathered from the task folders) are looked
    up through this, so a row whose folder lacks a piece fails with one sentence naming the task and the file to
    write (`where`).
    """
    try:
        return table[info.name]
    except KeyError:
        raise MissingTaskEntry(f"task {info.name!r} has no {what}: add it in {where} (docs/new_task.md)") from None


def stray_entries(table: Mapping[str, object]) -> list[str]:
    """Keys of a per-task table that name no catalogue row (a typo or a removed task)."""
    return sorted(set(table) - set(BY_NAME))


def find_task(spelling: str) -> TaskInfo | None:
    """The catalogue row of any spelling of a task (`TaskInfo.spellings`, case-insensitive), e.g. `mrot`,
    `mental-rotation`, `levante_mental_rotation`; None when no task is spelled so."""
    key = spelling.strip().lower()
    return next((info for info in TASKS if key in {s.lower() for s in info.spellings}), None)


def accepted_spellings() -> str:
    """The accepted spellings of every task, for messages: `vocab, ..., mental-rotation (mrot, ...), ...`."""
    return ", ".join(info.name + (f" ({', '.join(info.spellings[1:])})" if len(info.spellings) > 1 else "")
                     for info in TASKS)
