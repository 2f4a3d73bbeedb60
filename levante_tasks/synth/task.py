"""How the synthetic release makes one task: the `SynthTask` each task folder's `synth.py` defines
(`levante_tasks/tasks/<folder>/synth.py`, gathered by `levante_tasks.synth.registry`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from levante_tasks.synth.items import TaskItems


@dataclass(frozen=True)
class SynthTask:
    """How the synthetic release makes one task.

    `two_pl`: item truth is 2PL (a1 drawn) rather than Rasch (a1 = 1). `site_groups`: the IRT truth is a
    multigroup model by site rather than one group `all` (as in the LEVANTE model registry; synth/children.py).
    """

    build: Callable[[np.random.Generator], TaskItems]
    two_pl: bool = False
    site_groups: bool = False
