"""The same-different-selection task's synthetic builder (made-up items and pictures; docs/synth.md)."""

from levante_tasks.synth import items_reasoning
from levante_tasks.synth.task import SynthTask

SYNTH = SynthTask(items_reasoning.build_sds, two_pl=True)
