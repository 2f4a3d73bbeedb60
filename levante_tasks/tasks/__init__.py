"""The task registry: one line per task folder, in catalogue order. A folder holds everything one task owns.

`levante_tasks/tasks/<folder>/` (the folder is the lmms-eval name without `levante_`):
- `__init__.py`: `TASK`, its catalogue row (`levante_tasks.schema.task_info.TaskInfo`; schema layer);
- `items.py`: `RULES`, how `prepare` turns its manifest rows into items (`levante_tasks.data.rules.ItemRules`;
  data layer);
- `synth.py`: `SYNTH`, its synthetic builder (`levante_tasks.synth.task.SynthTask`; synth layer);
- `fixture.py`: `SPEC`, its test fixture (`levante_tasks.testing.fixture_spec.FixtureSpec`; testing layer);
- `item_counts.json` (its item counts, from `--manifest`), `README.md` and its lmms-eval YAMLs: written by
  `python -m levante_tasks.lmms.generate`.

Each layer gathers its own table from the registry (`pieces`), so adding a task is one new folder plus one line
here (docs/new_task.md); `levante_tasks.testing.checklist.missing_for` names what a folder still lacks. This
folder is also lmms-eval's task root (the `lmms_eval.tasks` entry point, `LMMS_EVAL_PLUGINS=levante_tasks`): the
shared templates, the all-task groups (`_groups/`) and the hand-written L0 trace tasks (`l0_trace/`) sit beside
the task folders.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

FOLDERS = (
    "vocab",
    "trog",
    "egma_math",
    "theory_of_mind",
    "matrix_reasoning",
    "mental_rotation",
    "same_different",
)


def piece_file(folder: str, module: str) -> str:
    """The repository path of one piece of a task folder, for messages: `levante_tasks/tasks/<folder>/<module>.py`."""
    return f"levante_tasks/tasks/{folder}/{module}.py"


def rows(folders: tuple[str, ...] = FOLDERS) -> tuple[Any, ...]:
    """The catalogue rows (`TASK` of each folder's `__init__.py`), in registry order; a folder whose row names
    another folder is an error naming both."""
    found = []
    for folder in folders:
        row = importlib.import_module(f"{__name__}.{folder}").TASK
        if row.folder != folder:
            raise ValueError(f"{piece_file(folder, '__init__')}: TASK {row.name!r} belongs in folder {row.folder!r} "
                             f"(its lmms-eval name {row.lmms_name!r} without `levante_`)")
        found.append(row)
    return tuple(found)


def pieces(module: str, name: str, folders: tuple[str, ...] = FOLDERS) -> dict[str, Any]:
    """Task name -> `name` of `levante_tasks/tasks/<folder>/<module>.py`, for each registered folder that has that
    module (the layer that owns `module` looks its entries up with `schema.tasks.entry_for`)."""
    found = {}
    for folder in folders:
        dotted = f"{__name__}.{folder}.{module}"
        if importlib.util.find_spec(dotted) is None:
            continue
        piece = getattr(importlib.import_module(dotted), name, None)
        if piece is None:
            raise AttributeError(f"{piece_file(folder, module)}: defines no {name}")
        found[importlib.import_module(f"{__name__}.{folder}").TASK.name] = piece
    return found
