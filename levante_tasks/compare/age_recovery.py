"""Recovery of the age equivalent's interval on the children's curve alone, up to and beyond its youngest ages.

Children like LEVANTE's vocab calibration (../shared/docs/levante.md section 10: age ~ 0.748 theta + 9.357, r = .49
over 180 runs): `n_children` with ages U(5, 12) (rounded to 0.01 years, as runs tables give them) and theta =
0.32 (age - 8.5) + N(0, 1.15^2), so r(age, theta) = .49. Models: `n_models` of known true age U(2.5, 12), some
younger than every child, whose theta estimate is 0.32 (true age - 8.5) + N(0, se^2) with its SE (`se`: about a
model answering all of a vocab bank), inverted through the children's curve by `AgeCurves` as `compare` does.
Truth: the age at which the children's mean theta equals the model's true theta. The readout is scored as the
report reads it (`recovery.age_interval`): per 1-year band of true age, how often the interval covers the truth.

The by-age view's other readouts, likewise: the curve's band as the plot draws it against the true curve
(`curve_band_coverage`), and the children's accuracy per 1-year age band against its population truth on the
pipeline recovery's synthetic children (`accuracy_coverage`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from levante_tasks.compare.age import AgeCurves
from levante_tasks.compare.age_view import accuracy_by_age, child_accuracy, curve_table
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


def _children(design: EdgeDesign, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One replicate's children: ages and thetas."""
    age = np.round(rng.uniform(*design.child_ages, design.n_children), 2)
    return age, design.slope * (age - CENTRE) + rng.normal(0.0, design.residual_sd, design.n_children)


def replicate(design: EdgeDesign, index: int) -> pd.DataFrame:
    """One replicate: fresh children and models; one row per model (true age and the age readouts)."""
    rng = np.random.default_rng([design.seed, index])
    age, theta = _children(design, rng)
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


def curve_band_coverage(design: EdgeDesign) -> dict[str, dict[str, float]]:
    """The curve's band as the plot draws it (`age_view.curve_table`) against the true curve: per 1-year band of
    age, the share of grid ages with a band, its pointwise coverage and the curve's bias there."""
    rows = []
    for index in range(design.replicates):
        age, theta = _children(design, np.random.default_rng([design.seed, index]))
        curve = curve_table(AgeCurves(age, theta, design.n_boot, index), age, design.level)
        truth = design.slope * (curve["age"] - CENTRE)
        rows.append(curve.assign(drawn=curve["band_low"].notna(), error=curve["theta"] - truth,
                                 covered=(curve["band_low"] <= truth) & (truth <= curve["band_high"])))
    table = pd.concat(rows, ignore_index=True)
    out = {}
    for low, part in table.groupby(np.floor(table["age"].clip(upper=design.child_ages[1] - 1e-9))):
        drawn = part[part["drawn"]]
        out[f"{low:g}-{low + 1:g}"] = {"drawn": round(float(part["drawn"].mean()), 3),
                                       "coverage": round(float(drawn["covered"].mean()), 3) if len(drawn) else None,
                                       "curve_bias": round(float(part["error"].mean()), 3)}
    return out


def accuracy_coverage(replicates: int, n_children: int = 800, seed: int = 0) -> dict[str, dict[str, float]]:
    """Children's accuracy per 1-year age band (`age_view`, as compare computes it from trials) against its truth,
    on the pipeline recovery's children (`recovery.POPULATIONS`, the synthetic vocab's 18 Rasch items): per band,
    coverage of its interval and bias of its mean. Truth: the population mean of a child's expected accuracy over
    ages uniform in the band (Monte Carlo, 200,000 children)."""
    from levante_tasks.compare.recovery import POPULATIONS, TASK, Design, _truths, group_prior
    from levante_tasks.synth import children as kids
    from levante_tasks.synth.populations import AGE_RANGE, draw_children

    truths = _truths(Design(seed=seed))
    mean, var = group_prior()
    plans = {TASK: {population: kids.TaskPlan(truths, "all", mean, var) for population in POPULATIONS}}
    rows = []
    for index in range(replicates):
        rng = np.random.default_rng([seed, index, 41])
        runs, trials = (pd.DataFrame(t) for t in kids.simulate(draw_children(n_children, rng, POPULATIONS), plans, rng))
        found = accuracy_by_age(runs[["run_id", "age"]].merge(child_accuracy(trials), on="run_id"), 0.95)
        rows.append(found[(found["n_children"] > 1) & (found["band_high"] <= AGE_RANGE[1])])  # whole bands
    table = pd.concat(rows, ignore_index=True)
    truth = {low: _band_accuracy(truths, low, POPULATIONS) for low in table["band_low"].unique()}
    table["truth"] = table["band_low"].map(truth)
    table["covered"] = (table["ci_low"] <= table["truth"]) & (table["truth"] <= table["ci_high"])
    return {band: {"n": int(len(part)), "coverage": round(float(part["covered"].mean()), 3),
                   "bias": round(float((part["mean_accuracy"] - part["truth"]).mean()), 4)}
            for band, part in table.groupby("age_band", sort=False)}


def _band_accuracy(truths: list, low: float, populations: tuple) -> float:
    """The population mean of a child's expected accuracy at ages U(low, low + 1), the sites in equal shares."""
    from levante_tasks.synth.children import p_correct
    from levante_tasks.synth.populations import AGE_CENTRE

    rng = np.random.default_rng(int(low * 100))
    n = 200_000
    age = rng.uniform(low, low + 1.0, n)
    site = rng.integers(0, len(populations), n)
    mean = np.array([p.mean for p in populations])[site]
    slope = np.array([p.slope for p in populations])[site]
    residual = np.array([p.residual_sd for p in populations])[site]
    theta = mean + slope * (age - AGE_CENTRE) + residual * rng.standard_normal(n)
    return float(np.mean([p_correct(truths, chunk).mean() for chunk in np.array_split(theta, 20)]))
