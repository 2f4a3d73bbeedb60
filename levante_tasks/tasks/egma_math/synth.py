"""The egma-math task's synthetic builder (made-up items and pictures; docs/synth.md)."""

from levante_tasks.synth import items_math
from levante_tasks.synth.task import SynthTask

SYNTH = SynthTask(items_math.build_math, site_groups=True)
