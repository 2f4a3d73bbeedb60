"""The synthetic release's per-task table, keyed by catalogue row: each task's item builder and IRT truth model.

`build_tasks` (synth/release.py) walks the catalogue (`levante_tasks.schema.tasks.TASKS`) and looks each row up
here, so a catalogue row without a builder is one clear error naming this file, not a silently missing task.
A builder takes the task's own random stream and returns its items and pictures (`synth.items.TaskItems`);
adding a task adds its stream and leaves every other task's bytes as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from levante_tasks.schema.tasks import TaskInfo, entry_for
from levante_tasks.synth import items_language, items_math, items_reasoning, tom
from levante_tasks.synth.items import TaskItems

REGISTRY_FILE = "levante_tasks/synth/registry.py"


@dataclass(frozen=True)
class SynthTask:
    """How the synthetic release makes one task.

    `two_pl`: item truth is 2PL (a1 drawn) rather than Rasch (a1 = 1). `site_groups`: the IRT truth is a
    multigroup model by site rather than one group `all` (as in the LEVANTE model registry; synth/children.py).
    """

    build: Callable[[np.random.Generator], TaskItems]
    two_pl: bool = False
    site_groups: bool = False


SYNTH_TASKS: dict[str, SynthTask] = {
    "egma-math": SynthTask(items_math.build_math, site_groups=True),
    "matrix-reasoning": SynthTask(items_reasoning.build_matrix, site_groups=True),
    "mental-rotation": SynthTask(items_reasoning.build_mrot, two_pl=True),
    "same-different-selection": SynthTask(items_reasoning.build_sds, two_pl=True),
    "theory-of-mind": SynthTask(tom.build_tom),
    "trog": SynthTask(items_language.build_trog, site_groups=True),
    "vocab": SynthTask(items_language.build_vocab),
}


def synth_task(info: TaskInfo) -> SynthTask:
    """The synthetic builder of a catalogue row (a clear error naming this file when the row has none)."""
    return entry_for(SYNTH_TASKS, info, "synthetic builder", REGISTRY_FILE)
