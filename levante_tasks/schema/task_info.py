"""One LEVANTE task's catalogue row (`TaskInfo`); each task folder (`levante_tasks/tasks/<folder>/`) defines its own.

The catalogue (`levante_tasks.schema.tasks`) gathers the rows from the task registry (`levante_tasks.tasks`); the
module docstring there says when a task's version is bumped.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    irt_by_language: bool = False  # LEVANTE calibrates it per language (`by_language/<language>` IRT records)

    def reported_subtypes(self, multiple_choice: bool) -> list[str]:
        """The sub-types an output type reports an accuracy for (multiple_choice has no slider items)."""
        return [name for name, _ in self.subtypes if not (multiple_choice and name in self.slider_subtypes)]

    @property
    def folder(self) -> str:
        """The task's folder, `levante_tasks/tasks/<folder>/`: its own code, its generated lmms-eval YAMLs and
        README."""
        return self.lmms_name.removeprefix("levante_")

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every name the task goes by: internal name, manifest task_id, lmms-eval name, folder (no repeats)."""
        return tuple(dict.fromkeys((self.name, self.task_id, self.lmms_name, self.folder)))

    def subtype_of(self, trial_type: str) -> str:
        """The reported sub-type of a trial type; "" when the task has none or the type is not listed."""
        return next((name for name, types in self.subtypes if trial_type in types), "")
