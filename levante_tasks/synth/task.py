"""How the synthetic release makes one task: the `SynthTask` each task folder's `synth.py` defines
(`levante_tasks/tasks/<folder>/synth.py`, gathered by `levante_tasks.synth.registry`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from levante_tasks.synth.items import TaskItems
from levante_tasks.synth.translations import TranslationRow


@dataclass(frozen=True)
class SynthTask:
    """How the synthetic release makes one task.

    `two_pl`: item truth is 2PL (a1 drawn) rather than Rasch (a1 = 1). `by_language`: the task is calibrated per
    language (one single-group record per language, item parameters differing between languages: configural
    invariance, as LEVANTE's vocab and theory-of-mind) rather than by one multigroup record whose groups are the
    datasets (scalar invariance); synth/records.py. `translate`: the task's rows of the translation table
    (synth/translations.py); None: the table has no rows for it.
    """

    build: Callable[[np.random.Generator], TaskItems]
    two_pl: bool = False
    by_language: bool = False
    translate: Callable[[TaskItems], list[TranslationRow]] | None = None
