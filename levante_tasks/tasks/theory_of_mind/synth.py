"""The theory-of-mind task's synthetic builder (made-up items and pictures; docs/synth.md)."""

from levante_tasks.synth import tom
from levante_tasks.synth.task import SynthTask

SYNTH = SynthTask(tom.build_tom)
