"""The task catalogue: each LEVANTE task's names in the release, the manifest, lmms-eval and this package.

Adding a task is one `TaskInfo` row here (plus its item rules in `levante_tasks.data.items`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskInfo:
    """One LEVANTE task.

    `subtypes` are the reported sub-types (a per-type accuracy each; option orders are balanced and control
    images shuffled within each): (name, trial types) pairs. Without them the whole task is one group.
    """

    name: str  # internal name: release folders corpus/<name>/ and visual/<name>/, item rows, records
    task_id: str  # the manifest's short task_id
    lmms_name: str  # lmms-eval task name of the default variant (other variants add suffixes, docs/tasks.md)
    image_options: bool  # options are pictures in visual/<name>/; else text (math numbers, ToM words)
    repeated_uids: bool = False  # the manifest reuses one item_uid for distinct trials (made `<uid>__<k>`)
    subtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    slider_subtypes: tuple[str, ...] = ()  # sub-types of slider items only: no multiple_choice form

    def reported_subtypes(self, multiple_choice: bool) -> list[str]:
        """The sub-types an output type reports an accuracy for (multiple_choice has no slider items)."""
        return [name for name, _ in self.subtypes if not (multiple_choice and name in self.slider_subtypes)]

    @property
    def folder(self) -> str:
        """The task's folder under `levante_tasks/lmms/tasks/`."""
        return self.lmms_name.removeprefix("levante_")

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every name the task goes by: internal name, manifest task_id, lmms-eval name, folder (no repeats)."""
        return tuple(dict.fromkeys((self.name, self.task_id, self.lmms_name, self.folder)))

    def subtype_of(self, trial_type: str) -> str:
        """The reported sub-type of a trial type; "" when the task has none or the type is not listed."""
        return next((name for name, types in self.subtypes if trial_type in types), "")


MATH_SUBTYPES = (
    ("number_identification", ("Number Identification",)),
    ("number_comparison", ("Number Comparison",)),
    ("addition", ("Addition",)),
    ("subtraction", ("Subtraction",)),
    ("multiplication", ("Multiplication",)),
    ("fraction", ("Fraction",)),
    ("missing_number", ("Missing Number",)),
    ("counting", ("Counting", "Counting AFC")),
    ("non_symbolic", ("Non-symbolic Number Identification", "Non-symbolic Number Comparison")),
    ("number_line", ("Number Line 4afc",)),
    ("number_line_slider", ("Number Line Slider",)),
)

TASKS = (
    TaskInfo("vocab", "vocab", "levante_vocab", image_options=True),
    TaskInfo("trog", "trog", "levante_trog", image_options=True),
    TaskInfo("egma-math", "math", "levante_egma_math", image_options=False, subtypes=MATH_SUBTYPES,
             slider_subtypes=("number_line_slider",)),
    TaskInfo("theory-of-mind", "tom", "levante_theory_of_mind", image_options=False),
    TaskInfo("matrix-reasoning", "matrix", "levante_matrix_reasoning", image_options=True),
    TaskInfo("mental-rotation", "mrot", "levante_mental_rotation", image_options=True),
    TaskInfo("same-different-selection", "sds", "levante_same_different", image_options=True, repeated_uids=True),
)
BY_NAME = {info.name: info for info in TASKS}


def task_info(name: str) -> TaskInfo:
    """The catalogue row of an internal task name (KeyError names the unknown task)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown LEVANTE task {name!r}; known: {', '.join(BY_NAME)}") from None


def find_task(spelling: str) -> TaskInfo | None:
    """The catalogue row of any spelling of a task (`TaskInfo.spellings`, case-insensitive), e.g. `mrot`,
    `mental-rotation`, `levante_mental_rotation`; None when no task is spelled so."""
    key = spelling.strip().lower()
    return next((info for info in TASKS if key in {s.lower() for s in info.spellings}), None)


def accepted_spellings() -> str:
    """The accepted spellings of every task, for messages: `vocab, ..., mental-rotation (mrot, ...), ...`."""
    return ", ".join(info.name + (f" ({', '.join(info.spellings[1:])})" if len(info.spellings) > 1 else "")
                     for info in TASKS)
