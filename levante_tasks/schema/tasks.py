"""The task catalogue: each LEVANTE task's names in the release, the manifest, lmms-eval and this package.

Task versions (`TaskInfo.version`, like inspect_evals' `eval.yaml` version): a whole number a person bumps, per task,
when a change alters what a model is shown or how a response is scored or recorded: the prompt text, the option
orders (or their seeds), the controls (blank and shuffled images), the answer parsing, or the per-item records. A
refactor, a reworded error message or a harness change that leaves all of these as they were keeps the version.
Results carry it (lmms-eval's `versions` and `metadata.version`, inspect's task version, and the run provenance's
`task_version`); results of different versions are never pooled: `levante-tasks summarize` refuses to average them
into one cell and `verify` reports a recorded version that is not the installed one. The task source hash
(`schema.task_source`) stays as audit evidence of the exact code, not as the version.

Everything else a task needs is looked up by its row (`entry_for`): item rules (`levante_tasks.data.items`), the
synthetic builder (`levante_tasks.synth.registry`), the fixture spec (`levante_tasks.testing.fixture_data`), the
generated lmms-eval folder and README. `levante_tasks.testing.checklist.missing_for` names what a row still lacks;
docs/new_task.md lists the steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class TaskInfo:
    """One LEVANTE task.

    `subtypes` are the reported sub-types (a per-type accuracy each; option orders are balanced and control
    images shuffled within each): (name, trial types) pairs. Without them the whole task is one group.
    `version`: bump it (by 1) when a change alters what a model is shown or how a response is scored or recorded
    (prompts, option orders, controls, parsing, records; module docstring); results of different versions are never
    pooled.
    """

    name: str  # internal name: release folders corpus/<name>/ and visual/<name>/, item rows, records
    task_id: str  # the manifest's short task_id
    lmms_name: str  # lmms-eval task name of the default variant (other variants add suffixes, docs/tasks.md)
    image_options: bool  # options are pictures in visual/<name>/; else text (math numbers, ToM words)
    repeated_uids: bool = False  # the manifest reuses one item_uid for distinct trials (made `<uid>__<k>`)
    subtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    slider_subtypes: tuple[str, ...] = ()  # sub-types of slider items only: no multiple_choice form
    version: int = 1  # human-bumped task version (docstring); results of different versions are never pooled
    measures: str = ""  # what the task measures, one or two sentences (the generated README's first paragraph)

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
    TaskInfo("vocab", "vocab", "levante_vocab", version=1, image_options=True,
             measures="Receptive vocabulary: the child hears a word and picks the picture it names among four "
                      "pictures."),
    TaskInfo("trog", "trog", "levante_trog", version=1, image_options=True,
             measures="Receptive grammar (after the Test for Reception of Grammar, TROG): the child hears a sentence "
                      "and picks the picture that matches it; the other pictures fit a different grammatical reading "
                      "(negation, passives, relative clauses, prepositions, ...)."),
    TaskInfo("egma-math", "math", "levante_egma_math", version=1, image_options=False, subtypes=MATH_SUBTYPES,
             slider_subtypes=("number_line_slider",),
             measures="Early numeracy and math (items after the Early Grade Mathematics Assessment, EGMA): number "
                      "identification and comparison, counting, missing numbers, arithmetic, fractions and "
                      "number-line estimation (four choices, or placing a number on a line as a slider)."),
    TaskInfo("theory-of-mind", "tom", "levante_theory_of_mind", version=1, image_options=False,
             measures="Theory of mind: short stories followed by questions about what a character believes (false "
                      "belief), feels (emotion reasoning) or will do, with reality-check questions; answers are "
                      "words (hostile-attribution items have no normative answer and are left out)."),
    TaskInfo("matrix-reasoning", "matrix", "levante_matrix_reasoning", version=1, image_options=True,
             measures="Non-verbal abstract reasoning: the child picks the picture that completes a pattern matrix."),
    TaskInfo("mental-rotation", "mrot", "levante_mental_rotation", version=1, image_options=True,
             measures="Mental rotation (visuospatial): the child picks the picture that is the target shape rotated, "
                      "not mirrored (2D shapes, trial type 2, and 3D objects, trial type 3)."),
    TaskInfo("same-different-selection", "sds", "levante_same_different", version=1, image_options=True,
             repeated_uids=True,
             measures="Same-different selection (cognitive flexibility): the child picks the card that matches a "
                      "sample in one dimension (shape, colour, size, number) and, in later blocks, picks pairs of "
                      "cards that are the same in a new way each time."),
)
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

    Per-task tables (item rules, synthetic builders, fixture specs) are looked up through this, so a new row
    without its entry fails with one sentence naming the task and the file to add it to (`where`).
    """
    try:
        return table[info.name]
    except KeyError:
        raise MissingTaskEntry(f"task {info.name!r} has no {what}: add one keyed {info.name!r} to {where} "
                               "(docs/new_task.md)") from None


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
