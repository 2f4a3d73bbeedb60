"""Recovery of the age equivalent's interval on the children's curve alone, up to and beyond its youngest ages.

Children like LEVANTE's vocab calibration (../shared/docs/levante.md section 10: age ~ 0.748 theta + 9.357, r = .49
over 180 runs): `n_children` with ages U(5, 12) (rounded to 0.01 years, as runs tables give them) and theta =
0.32 (age - 8.5) + N(0, 1.15^2), so r(age, theta) = .49. Models: `n_models` of known true age U(2.5, 12), some
younger than every child, whose theta estimate is 0.32 (true age - 8.5) + N(0, se^2) with its SE (`se`: about a
model answering all of a vocab bank), inverted through the children's curve by `AgeCurves` as `compare` does.
Truth: the age at which the children's mean theta equals the model's true theta. The readout is scored as the
report reads it (`recovery.age_interval`): per 1-year band of true age, how often the interval covers the truth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from levante_tasks.compare.age import AgeCurves
from levante_tasks.compare.recovery import AGE_BANDS, age_interval

CENTRE = 8.5


@dataclass(frozen=True)
class EdgeDesign:
    """Sizes of one study of the age interval (children's curve and models' SE)."""

    replicates: int = 20
    n_children: int = 180
    slope: float = 0.32
    residual_sd: float = 1.15
    child_ages: tuple[float, float] = (5.0, 12.0)
    model_ages: tuple[float, float] = (2.5, 12.0)
    n_models: int = 200
    se: float = 0.2
    n_boot: int = 300
    level: float = 0.95
    seed: int = 0


def replicate(design: EdgeDesign, index: int) -> pd.DataFrame:
    """One replicate: fresh children and models; one row per model (true age and the age readouts)."""
    rng = np.random.default_rng([design.seed, index])
    age = np.round(rng.uniform(*design.child_ages, design.n_children), 2)
    theta = design.slope * (age - CENTRE) + rng.normal(0.0, design.residual_sd, design.n_children)
    true_age = rng.uniform(*design.model_ages, design.n_models)
    estimate = design.slope * (true_age - CENTRE) + rng.normal(0.0, design.se, design.n_models)
    curves = AgeCurves(age, theta, design.n_boot, index)
    found = curves.equivalents(estimate, np.full(design.n_models, design.se), design.level)
    return pd.DataFrame(found).assign(true_age=true_age, replicate=index)


def run(design: EdgeDesign) -> pd.DataFrame:
    """Every replicate of a design, one table."""
    return pd.concat([replicate(design, r) for r in range(design.replicates)], ignore_index=True)


def coverage_by_band(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per 1-year band of true age: models, interval coverage, and how often the whole interval reads below
    youngest (its high end too)."""
    low, high = age_interval(table)
    frame = pd.DataFrame({"covered": (low <= table["true_age"]) & (table["true_age"] <= high),
                          "all_below": table["age_ci_high_flag"].fillna("") == "below_youngest"})
    bands = pd.cut(table["true_age"], AGE_BANDS, right=False)
    return {f"{band.left:g}-{band.right:g}": {"n": int(len(part)), "coverage": round(float(part["covered"].mean()), 3),
                                              "all_below_youngest": round(float(part["all_below"].mean()), 3)}
            for band, part in frame.groupby(bands, observed=True)}
