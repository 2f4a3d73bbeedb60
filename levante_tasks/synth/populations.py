"""The simulated children's sites: where they live, their IRT group (dataset), their language and their ability.

Modelled on LEVANTE's 2026.1 release (docs: ../shared/docs/levante.md section 6.1): Colombia (Spanish, es-CO),
Germany (German, de-DE) and Canada (English, en-US), in its proportions 1,020 : 339 : 188. Each site is one
dataset (the IRT group of its runs, as `levantemodels::score_irt` reads `dataset`) and one language; each has its
own ability distribution and age slope on the common scale of the multigroup records (synth/records.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

AGE_RANGE = (5.0, 12.0)  # years, uniform
AGE_CENTRE = sum(AGE_RANGE) / 2
AGE_SPAN = AGE_RANGE[1] - AGE_RANGE[0]  # var(age) = AGE_SPAN^2 / 12


@dataclass(frozen=True)
class Population:
    """One site's children: names, their share of the release, and theta = mean + slope * (age - 8.5) + residual,
    so that theta has the variance `sd`^2 around `mean` (ages U(5, 12))."""

    site: str
    dataset: str  # the IRT group name of its runs
    language: str  # the children's language tag (runs -> variants `language`)
    weight: int  # share of the children (LEVANTE 2026.1 counts)
    mean: float
    sd: float
    slope: float  # logits per year of age

    @property
    def residual_sd(self) -> float:
        """SD of theta around the population's age line."""
        return math.sqrt(self.sd**2 - self.slope**2 * AGE_SPAN**2 / 12)

    @property
    def var(self) -> float:
        """Variance of theta in the population (slope^2 * var(age) + residual^2)."""
        return self.slope**2 * AGE_SPAN**2 / 12 + self.residual_sd**2

    def age_at(self, theta: float) -> float:
        """The age at which this population's mean theta equals `theta` (the age equivalent's truth)."""
        return AGE_CENTRE + (theta - self.mean) / self.slope


# Canada is the reference group of the multigroup records (mean 0, SD 1: fixed in mirt's identification).
POPULATIONS = (
    Population("synth_site_co", "synth_co_pilot", "es-CO", 1020, -0.3, 0.9, 0.25),
    Population("synth_site_de", "synth_de_pilot", "de-DE", 339, 0.25, 1.1, 0.35),
    Population("synth_site_ca", "synth_ca_pilot", "en-US", 188, 0.0, 1.0, 0.30),
)
REFERENCE = POPULATIONS[2]


@dataclass(frozen=True)
class Child:
    """One simulated child: id, population, age (years) and a general ability shared by its tasks."""

    user_id: str
    population: Population
    age: float
    general: float


def interleave(weights: Sequence[int], n: int) -> list[int]:
    """Population index of each of n children in proportion to `weights`, interleaved (smooth weighted
    round-robin: every prefix is proportioned, ties go to the first), so a small release holds every site."""
    current = [0] * len(weights)
    total = sum(weights)
    order = []
    for _ in range(n):
        current = [c + w for c, w in zip(current, weights, strict=True)]
        pick = current.index(max(current))
        current[pick] -= total
        order.append(pick)
    return order


def draw_children(n: int, rng: np.random.Generator, populations: Sequence[Population] = POPULATIONS) -> list[Child]:
    """n children with uniform ages 5-12, in the populations' proportions."""
    ages = rng.uniform(*AGE_RANGE, size=n)
    general = rng.normal(size=n)
    which = interleave([p.weight for p in populations], n)
    return [Child(f"synth_user_{k + 1:04d}", populations[which[k]], round(float(ages[k]), 2), float(general[k]))
            for k in range(n)]
