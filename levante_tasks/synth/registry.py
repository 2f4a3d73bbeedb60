"""The synthetic release's per-task table, keyed by catalogue row: each task's item builder and IRT truth model.

`SYNTH_TASKS` is gathered from the task folders (`levante_tasks/tasks/<folder>/synth.py`, each defining `SYNTH`).
`build_tasks` (synth/release.py) walks the catalogue (`levante_tasks.schema.tasks.TASKS`) and looks each row up
here, so a catalogue row without a builder is one clear error naming its folder's file, not a silently missing
task. A builder takes the task's own random stream and returns its items and pictures (`synth.items.TaskItems`);
adding a task adds its stream and leaves every other task's bytes as they were.
"""

from __future__ import annotations

from levante_tasks.schema.tasks import TaskInfo, entry_for
from levante_tasks.synth.task import SynthTask
from levante_tasks.tasks import piece_file, pieces

SYNTH_MODULE = "synth"  # levante_tasks/tasks/<folder>/synth.py defines SYNTH
SYNTH_TASKS: dict[str, SynthTask] = pieces(SYNTH_MODULE, "SYNTH")  # task name -> its synthetic builder


def synth_task(info: TaskInfo) -> SynthTask:
    """The synthetic builder of a catalogue row (a clear error naming its folder's file when the row has none)."""
    return entry_for(SYNTH_TASKS, info, "synthetic builder", piece_file(info.folder, SYNTH_MODULE))
