"""Synthetic LEVANTE release generator: made-up items and pictures in the real bucket layout, simulated
children and IRT truth, all deterministic in a seed (for demos and tests without the CC-BY-NC assets)."""

from levante_tasks.synth.release import GENERATOR_VERSION, write_synthetic_release

__all__ = ["GENERATOR_VERSION", "write_synthetic_release"]
