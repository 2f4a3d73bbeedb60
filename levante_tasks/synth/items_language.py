"""Colour and shape words of the synthetic picture-word tasks (vocab, trog, the generic picture choice) and `pick`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COMMON_COLOURS = ("red", "blue", "green", "yellow")
RARE_COLOURS = ("purple", "orange", "pink", "brown", "teal", "maroon")
COMMON_SHAPES = ("circle", "square", "triangle", "star")
RARE_SHAPES = ("diamond", "pentagon", "hexagon", "cross", "trapezoid", "oval", "crescent", "arrow")


def pick(rng: np.random.Generator, pool: Sequence[str], k: int, exclude: Sequence[str] = ()) -> list[str]:
    """k distinct members of `pool` (minus `exclude`), in random order."""
    candidates = [x for x in pool if x not in exclude]
    return [candidates[i] for i in rng.choice(len(candidates), size=k, replace=False)]
