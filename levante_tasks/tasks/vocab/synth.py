"""The vocab task's synthetic builder (made-up items and pictures; docs/synth.md)."""

from levante_tasks.synth import items_language
from levante_tasks.synth.task import SynthTask

SYNTH = SynthTask(items_language.build_vocab)
